import Foundation
import XCTest
@testable import PeerLink

/// The trust store (`trusted-peers`): what it records about each peer, how verification only
/// ever strengthens, and that a file written by an older release still reads — and the
/// other way round, that an older release still finds every peer ID in a new file.
final class TrustStoreTests: XCTestCase {
    private var dir = ""
    private let alice = try! PeerID(bytes: Array(repeating: 1, count: 20))
    private let bob = try! PeerID(bytes: Array(repeating: 2, count: 20))

    override func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-trust-\(UUID())").path
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func testRecordsFirstSeenAndHowVerified() throws {
        let store = IdentityStore(directory: dir)
        let t0 = Date(timeIntervalSince1970: 1_800_000_000), t1 = t0.addingTimeInterval(3600), t2 = t1.addingTimeInterval(60)
        try store.trust(alice, name: "alice's laptop", verification: .firstUse, now: t0)
        try store.trust(alice, name: "alice", verification: .peerID, now: t1)
        var r = try XCTUnwrap(store.trustRecords().first)
        XCTAssertEqual(r.name, "alice")
        XCTAssertEqual(r.firstSeen, t0, "the first time is kept")
        XCTAssertEqual(r.verification, .peerID)
        XCTAssertEqual(r.verifiedAt, t1)
        try store.trust(alice, name: "alice", verification: .code, now: t2)
        try store.trust(alice, name: "alice", verification: .firstUse, now: t2.addingTimeInterval(60))
        r = try XCTUnwrap(store.trustRecords().first)
        XCTAssertEqual(r.verification, .code, "a weaker answer later does not undo a code comparison")
        XCTAssertEqual(r.verifiedAt, t2)
        XCTAssertEqual(store.trustedPeers(), [alice: "alice"])
    }

    func testAFileFromAnOlderReleaseReads() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try "\(alice) alice's laptop\n\(bob)\n".write(toFile: dir + "/trusted-peers", atomically: true, encoding: .utf8)
        let store = IdentityStore(directory: dir)
        XCTAssertEqual(store.trustedPeers(), [alice: "alice's laptop", bob: ""])
        XCTAssertNil(store.trustRecords().first?.firstSeen)
        XCTAssertNil(store.trustRecords().first?.verification)
        try store.untrust(bob)
        XCTAssertEqual(IdentityStore(directory: dir).trustedPeers(), [alice: "alice's laptop"])
    }

    func testAnOlderReleaseFindsEveryPeerInANewFile() throws {
        let store = IdentityStore(directory: dir)
        try store.trust(alice, name: "alice two words", verification: .code)
        try store.trust(bob, name: "", verification: .firstUse)
        // The parser of earlier releases: "<id> <name>" per line, lines that do not start
        // with a peer ID skipped.
        let text = try String(contentsOfFile: store.trustPath, encoding: .utf8)
        var old: [PeerID: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard let first = parts.first, let id = try? PeerID(parsing: String(first)) else { continue }
            old[id] = parts.count > 1 ? String(parts[1]) : ""
        }
        XCTAssertEqual(old, [alice: "alice two words", bob: ""], text)
    }

    func testUnknownFieldsAndJunkAreSkipped() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try """
            # a comment
            #= first-seen=2026-01-01T00:00:00Z
            \(alice) alice
            #= first-seen=2026-01-02T03:04:05Z verification=code future-field=1 verified-at=bogus
            not-a-peer-id something
            #= verification=peer-id
            """.write(toFile: dir + "/trusted-peers", atomically: true, encoding: .utf8)
        let records = IdentityStore(directory: dir).trustRecords()
        XCTAssertEqual(records.count, 1)
        XCTAssertEqual(records[0].verification, .code, "a #= line after a junk line belongs to nobody")
        XCTAssertEqual(records[0].firstSeen, Date(timeIntervalSince1970: 1_767_323_045))
        XCTAssertNil(records[0].verifiedAt)
    }
}
