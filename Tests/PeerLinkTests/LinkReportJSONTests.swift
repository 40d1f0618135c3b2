import Foundation
import XCTest
@testable import PeerLink

/// The JSON of `peerlink links --json` and the daemon's API keeps its shape now that reasons,
/// steps and times are typed: reasons are text keyed by role name, a step is its name, a time
/// is seconds since 1970.
final class LinkReportJSONTests: XCTestCase {
    func testReasonsAreTextKeyedByRoleName() throws {
        let link = LinkSnapshot(id: 2, medium: .tcp, remote: "10.0.0.2:4000", datagram: nil, datagrams: nil, wire: nil,
                                rttMillis: 3, loss: 0, throughput: nil, state: "up", carries: ["bulk", "reliable-copy"],
                                reasons: [.bulk: CarrierReason(.fastestForBulk(bytesPerSecond: 2_000_000, frame: 65519))],
                                messageCopyReason: CarrierReason(.messageCopy(bytesPerSecond: 500_000, next: .fallbackNoBluetooth)),
                                reason: "bulk: …")
        let json = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(link)) as? [String: Any]
        XCTAssertEqual(json?["reasons"] as? [String: String], [
            "bulk": "fastest link for bulk (2000 kB/s in frames of 65519 bytes)",
            "reliable-copy": "copy of reliable messages (copy-messages on, up to 500 kB/s): next link for messages, fallback: no usable Bluetooth link",
        ])
        let back = try JSONDecoder().decode(LinkSnapshot.self, from: try JSONEncoder().encode(link))
        XCTAssertEqual(back.reasons[.bulk]?.description, link.reasons[.bulk]?.description)
        XCTAssertEqual(back.messageCopyReason?.description, link.messageCopyReason?.description)
        XCTAssertEqual(back.carries, ["bulk", "reliable-copy"])
    }

    /// A record as an earlier daemon wrote it reads back with typed fields and writes the same
    /// numbers and names.
    func testUpgradeRecordReadsAndWritesTheEarlierJSON() throws {
        let old = #"{"time":1767225600.5,"id":7,"medium":"wifi-direct","step":"torn-down","stepMillis":40,"sinceProposalMillis":900,"detail":"idle"}"#
        let record = try JSONDecoder().decode(UpgradeRecord.self, from: Data(old.utf8))
        XCTAssertEqual(record.time, Date(timeIntervalSince1970: 1_767_225_600.5))
        XCTAssertEqual(record.step, .tornDown)
        XCTAssertEqual(record.sinceLastStep, .milliseconds(40))
        let again = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(record)) as? NSDictionary
        XCTAssertEqual(again, try JSONSerialization.jsonObject(with: Data(old.utf8)) as? NSDictionary)
    }

    /// A report from a daemon that knows a step this version does not still reads: that step
    /// is left out, the rest kept.
    func testAnUnknownStepLeavesOutOnlyThatStep() throws {
        let known = #"{"time":1767225600.5,"id":7,"medium":"wifi-direct","step":"proposed","stepMillis":0,"sinceProposalMillis":0,"detail":""}"#
        let unknown = #"{"time":1767225601,"id":7,"medium":"wifi-direct","step":"teleported","stepMillis":5,"sinceProposalMillis":5,"detail":""}"#
        let peer = Identity().peerID.description
        let json = #"[{"peer":"\#(peer)","displayName":"b","state":"connected","links":[],"upgrades":[\#(known),\#(unknown)]}]"#
        let peers = try JSONDecoder().decode([PeerLinks].self, from: Data(json.utf8))
        XCTAssertEqual(peers.first?.upgrades.map(\.step), [.proposed])
        let none = #"[{"peer":"\#(peer)","displayName":"b","state":"connected","links":[]}]"#
        XCTAssertEqual(try JSONDecoder().decode([PeerLinks].self, from: Data(none.utf8)).first?.upgrades, [])
    }
}
