import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkCore

/// Times in the public API are `Duration`s; the JSON of `peerlink links` and of the daemon's
/// API keeps its millisecond numbers, and the core still counts whole milliseconds.
final class DurationAPITests: XCTestCase {
    func testLinkSnapshotJSONKeepsItsMilliseconds() throws {
        var link = LinkSnapshot(id: 3, medium: .tcp, remote: "10.0.0.2:4000", datagram: nil, datagrams: nil, wire: nil,
                                rttMillis: nil, loss: 0, throughput: nil, state: "up", carries: [], reasons: [:], reason: "")
        XCTAssertNil(link.rtt)
        XCTAssertFalse(String(decoding: try JSONEncoder().encode(link), as: UTF8.self).contains("rtt"), "no round trip: no key")
        link.rtt = .milliseconds(42)
        let json = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(link)) as? [String: Any]
        XCTAssertEqual(json?["rttMillis"] as? Int, 42)
        let back = try JSONDecoder().decode(LinkSnapshot.self, from: try JSONEncoder().encode(link))
        XCTAssertEqual(back.rtt, .milliseconds(42))
    }

    func testUpgradeRecordJSONKeepsItsMilliseconds() throws {
        let event = UpgradeEvent(id: 7, medium: "wifi-direct", step: .linkUp, sinceProposal: .milliseconds(1250),
                                 sinceLastStep: .milliseconds(300), detail: "")
        let record = UpgradeRecord(event, at: 1_700_000_000.25)
        XCTAssertEqual(record.time, Date(timeIntervalSince1970: 1_700_000_000.25))
        XCTAssertEqual(record.step, .linkUp)
        XCTAssertEqual(record.sinceProposal, .milliseconds(1250))
        XCTAssertEqual(record.sinceLastStep, .milliseconds(300))
        let json = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(record)) as? [String: Any]
        XCTAssertEqual(json?["stepMillis"] as? Int, 300)
        XCTAssertEqual(json?["sinceProposalMillis"] as? Int, 1250)
        XCTAssertEqual(json?["time"] as? Double, 1_700_000_000.25, "seconds since 1970, as before")
        XCTAssertEqual(json?["step"] as? String, "link-up", "the step's name, as before")
        XCTAssertEqual(try JSONDecoder().decode(UpgradeRecord.self, from: try JSONEncoder().encode(record)), record)
    }

    func testSessionConfigTimesReachTheCoreInWholeMilliseconds() {
        var config = SessionConfig()
        XCTAssertEqual(config.keepaliveInterval, .seconds(1))
        XCTAssertEqual(config.ackDelay, .milliseconds(37), "a quarter of suspectAfter (150 ms), rounded down")
        config.keepaliveInterval = .microseconds(200_900)
        config.suspectAfter = .seconds(2)
        XCTAssertEqual(config.keepaliveMillis, 200, "sub-millisecond parts are dropped")
        XCTAssertEqual(config.ackDelay, .milliseconds(50))
        config.deadAfter = .seconds(-1)
        XCTAssertEqual(config.deadAfterMillis, 0, "a negative time counts as none")
        config.deadAfter = .seconds(Int64.max)
        XCTAssertEqual(config.deadAfterMillis, .max, "a time past the core's clock is its end")
    }

    func testMillisecondsReadAsTheSameSecondsAsBefore() {
        // Scenario delays are milliseconds; the memory links took them as `ms / 1000` seconds,
        // and seeded runs replay only if the Double is the same to the last bit.
        for ms in [1, 5, 100, 250, 300, 1_118, 1_235, 1_344, 2_300, 9_999, 10_000] {
            XCTAssertEqual(Duration.milliseconds(ms).inSeconds, Double(ms) / 1000, "\(ms) ms")
        }
    }
}
