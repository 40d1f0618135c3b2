import Foundation
import PeerLink
import PeerLinkStore
import TestKit
import XCTest
@testable import PeerLinkDaemon

/// Two field daemons on the in-memory medium: what the store-and-forward service decides —
/// delivery, the receiver's refusals (not trusted, quota, expired), and an item offered again
/// after its receipt was lost.
final class FieldDaemonTests: XCTestCase {
    func randomBytes(_ n: Int) -> [UInt8] {
        var rng = seededGenerator(self)
        return (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    func testAnItemForAPeerThatComesLaterArrivesOnceAndSettles() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        let bRoot = dir + "/b"
        let bPeer = try IdentityStore(directory: bRoot + "/cfg").loadOrCreate().identity.peerID
        let bytes = randomBytes(300_000)
        try a.drop("survey.csv", bytes: bytes, for: bPeer)
        await a.waitForLog("queued")
        let b = try await FieldNode("beta", net: net, discovery: disc, root: bRoot)
        await b.waitForLog("item received")
        await a.waitForLog("delivered")
        XCTAssertEqual(FileManager.default.contents(atPath: b.inbox + "/survey.csv").map(Array.init), bytes)
        XCTAssertEqual(files(b.inbox), ["survey.csv"])
        XCTAssertEqual(files(a.outbox(for: bPeer)), [], "the outbox is empty once delivered")
        let sent = files(a.config.stateDirectory + "/sent")
        XCTAssertEqual(sent.count, 2, "\(sent)")
        XCTAssertTrue(sent.contains { $0.hasSuffix("-survey.csv") } && sent.contains { $0.hasSuffix(".json") }, "\(sent)")
        XCTAssertEqual(try a.ledger.items(in: [.delivered]).count, 1)
        await a.stop(); await b.stop()
    }

    func testAReceiverThatDoesNotTrustTheHolderRefusesUntilItDoes() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        // B lets only trusted peers into its session.
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b") { $0.accept = .known }
        try a.drop("notes.txt", bytes: randomBytes(1000), for: b.peer)
        // B lists A as pending; A's one invitation waits for the owner.
        await b.waitForLog("peerlink pending accept \(a.peer)")
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertEqual(files(b.inbox), [])
        XCTAssertFalse(a.log.contains { $0.contains("declined the invitation") }, "one invitation waits; none replaced")
        XCTAssertEqual(try a.ledger.items(in: [.queued, .sending]).count, 1, "the item stays queued")
        // The owner trusts A the plain way (peerlink trust add): the waiting invitation is taken.
        try b.trust.trust(a.peer, name: "alpha")
        await b.waitForLog("a pending peer is now in the trust store: accepted")
        await b.waitForLog("item received")
        await a.waitForLog("delivered")
        await a.stop(); await b.stop()
    }

    func testAPendingPeerTheOwnerAcceptsIsTrustedAndItsItemArrives() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b") { $0.accept = .known }
        try a.drop("notes.txt", bytes: randomBytes(1000), for: b.peer)
        var listed: [PendingPeer] = []
        for _ in 0..<200 where listed.isEmpty {
            listed = await b.daemon.apiPending()
            if listed.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        XCTAssertEqual(listed.map(\.peer), [a.peer])
        XCTAssertEqual(listed.first?.name, "alpha")
        XCTAssertEqual(listed.first?.waiting, true)
        await XCTAssertThrowsAPIError(404) { _ = try await b.daemon.apiAnswerPending("nobody", .decline) }
        let outcome = try await b.daemon.apiAnswerPending("alpha", .accept(trust: true, name: "anna"))
        XCTAssertEqual(outcome.answer, "accepted")
        XCTAssertTrue(outcome.trusted)
        XCTAssertEqual(b.trust.trustedPeers()[a.peer], "anna")
        await b.waitForLog("item received")
        await a.waitForLog("delivered")
        let kinds = (try? b.daemon.events.after(b.daemon.events.oldestID - 1).get())?.map(\.kind) ?? []
        XCTAssertTrue(kinds.contains(.peerPending) && kinds.contains(.peerAccepted), "\(kinds)")
        await a.stop(); await b.stop()
    }

    func testDecliningAPendingPeerAnswersItsInvitationAndSaysSo() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b") { $0.accept = .known }
        try a.drop("notes.txt", bytes: randomBytes(1000), for: b.peer)
        await b.waitForLog("peerlink pending accept \(a.peer)")
        let outcome = try await b.daemon.apiAnswerPending(a.peer.description, .decline)
        XCTAssertEqual(outcome.answer, "declined")
        XCTAssertFalse(outcome.trusted)
        XCTAssertNil(b.trust.trustedPeers()[a.peer])
        let events = (try? b.daemon.events.after(b.daemon.events.oldestID - 1).get()) ?? []
        XCTAssertEqual(events.last { $0.kind == .peerDeclined }?.peer, a.peer.description)
        XCTAssertEqual(files(b.inbox), [])
        await a.stop(); await b.stop()
    }

    /// What `peerlink browse` reads through the daemon: the peers its browser sees, with
    /// `peer.found` as each appears and `peer.lost` as it goes.
    func testThePeersTheBrowserSeesAndTheirEvents() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b")
        var seen: [DaemonPeer] = []
        for _ in 0..<200 where seen.isEmpty {
            seen = await a.daemon.apiPeers()
            if seen.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        XCTAssertEqual(seen.map(\.info.peerID), [b.peer])
        XCTAssertEqual(seen.first?.info.displayName, "beta")
        XCTAssertEqual(seen.first?.connected, false, "nothing to deliver: no session")
        await b.stop()
        var events: [DaemonEvent] = []
        for _ in 0..<200 where !events.contains(where: { $0.kind == .peerLost }) {
            events = (try? a.daemon.events.after(a.daemon.events.oldestID - 1).get()) ?? []
            if !events.contains(where: { $0.kind == .peerLost }) { try await Task.sleep(for: .milliseconds(50)) }
        }
        XCTAssertEqual(events.filter { $0.kind == .peerFound }.map(\.peer), [b.peer.description])
        XCTAssertEqual(events.filter { $0.kind == .peerLost }.map(\.peer), [b.peer.description], "beta gone from the browser")
        let after = await a.daemon.apiPeers()
        XCTAssertEqual(after.count, 0)
        await a.stop()
    }

    func testABlockedPeerIsDeclinedUnaskedUntilUnblocked() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b") { $0.accept = .known }
        try a.drop("notes.txt", bytes: randomBytes(1000), for: b.peer)
        await b.waitForLog("peerlink pending accept \(a.peer)")
        let outcome = try await b.daemon.apiAnswerPending("alpha", .block)
        XCTAssertEqual(outcome.answer, "blocked")
        XCTAssertEqual(b.trust.blockedPeers()[a.peer], "alpha", "kept on disk beside the trust store")
        let events = (try? b.daemon.events.after(b.daemon.events.oldestID - 1).get()) ?? []
        XCTAssertEqual(events.last { $0.kind == .peerDeclined }?.reason, "blocked")
        // A holds its item and asks again (every 300 ms here): declined each time, never listed.
        let declinedBefore = a.log.filter { $0.contains("declined") }.count
        for _ in 0..<100 where a.log.filter({ $0.contains("declined") }).count < declinedBefore + 2 {
            try await Task.sleep(for: .milliseconds(50))
        }
        XCTAssertGreaterThanOrEqual(a.log.filter { $0.contains("declined") }.count, declinedBefore + 2, "alpha asked again and was declined")
        let pendingNow = await b.daemon.apiPending()
        XCTAssertEqual(pendingNow.map(\.peer), [], "a blocked peer is not listed")
        XCTAssertEqual(files(b.inbox), [])
        XCTAssertEqual(try a.ledger.items(in: [.queued, .sending]).count, 1, "the holder keeps its item")
        // Unblocked, it is listed again at its next invitation.
        await XCTAssertThrowsAPIError(404) { _ = try await b.daemon.apiAnswerPending("nobody", .unblock) }
        let un = try await b.daemon.apiAnswerPending(String(a.peer.description.prefix(6)), .unblock)
        XCTAssertEqual(un.answer, "unblocked")
        XCTAssertEqual(b.trust.blockedPeers(), [:])
        var listed: [PendingPeer] = []
        for _ in 0..<200 where listed.isEmpty {
            listed = await b.daemon.apiPending()
            if listed.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        XCTAssertEqual(listed.map(\.peer), [a.peer])
        await a.stop(); await b.stop()
    }

    func testTrustingABlockedPeerUnblocksIt() throws {
        let store = IdentityStore(directory: scratch(self) + "/cfg")
        let peer = PeerID(digest: Array(repeating: 9, count: 32))
        try store.trust(peer, name: "x")
        try store.block(peer, name: "x")
        XCTAssertNil(store.trustedPeers()[peer], "blocking takes it out of the trust store")
        XCTAssertEqual(store.blockedPeers()[peer], "x")
        try store.trust(peer, name: "x again")
        XCTAssertEqual(store.blockedPeers(), [:])
        XCTAssertEqual(store.trustedPeers()[peer], "x again")
    }

    func testAnItemOverTheQuotaWaitsAndTheQuotaCountsWhatTheInboxHolds() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b") { $0.quota = 10_000 }
        try a.drop("one.bin", bytes: randomBytes(6_000), for: b.peer)
        await b.waitForLog("item received")
        try a.drop("two.bin", bytes: randomBytes(6_000), for: b.peer)
        await a.waitForLog("quota: ")
        XCTAssertEqual(files(b.inbox), ["one.bin"], "the second item would go over the quota")
        // Taking the first file away makes room; the second comes on a later try.
        try FileManager.default.removeItem(atPath: b.inbox + "/one.bin")
        await b.waitForLog("two.bin")
        await a.stop(); await b.stop()
    }

    /// The holder's wall clock is set back two hours while an item rests after a refusal (the
    /// receiver's quota): the rest runs on the monotonic clock, so the item still goes as soon
    /// as there is room, not two hours later.
    func testAWallClockSetBackDoesNotStretchARest() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b") { $0.quota = 10_000 }
        try a.drop("one.bin", bytes: randomBytes(6_000), for: b.peer)
        await b.waitForLog("item received")
        try a.drop("two.bin", bytes: randomBytes(6_000), for: b.peer)
        await a.waitForLog("quota: ")
        a.jumpClock(by: -2 * 3600)
        try FileManager.default.removeItem(atPath: b.inbox + "/one.bin")
        await b.waitForLog("two.bin")
        XCTAssertEqual(files(b.inbox), ["two.bin"])
        // And forward: a day later by the wall clock, an item with a week to live still goes.
        a.jumpClock(by: 86400)
        try a.drop("three.bin", bytes: randomBytes(100), for: b.peer)
        await b.waitForLog("three.bin")
        await a.stop(); await b.stop()
    }

    /// An item that does not fit on the receiver's disk (keeping `keep_free` free) waits at its
    /// holder, both saying why; once space is freed the receiver asks for it at once (the
    /// holder's rest after the refusal is long here) and it arrives, once. A real tmpfs.
    func testAnItemThatDoesNotFitWaitsAndIsAskedForOnceSpaceIsFreed() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let disk = try SmallDisk(in: dir, megabytes: 8)
        defer { disk.unmount() }
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a", timing: { $0.refusalRest = .seconds(600) })
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b",
                                    configure: { $0.inbox = disk.path + "/inbox"; $0.keepFree = 1 << 20 })
        let filler = disk.path + "/filler"
        try Data(count: Int(disk.free) - (5 << 19)).write(to: URL(fileURLWithPath: filler))  // 2.5 MiB left
        let bytes = randomBytes(3 << 20)
        try a.drop("big.bin", bytes: bytes, for: b.peer)
        await b.waitForLog("item refused for now: it does not fit in the inbox")
        await a.waitForLog("peer refused an item for now; trying again later")
        XCTAssertTrue(a.log.contains { $0.contains("why=no space in the inbox: 3M needed") && $0.contains("beyond keep_free (1M)") },
                      a.log.suffix(5).joined(separator: "\n"))
        XCTAssertEqual(try a.ledger.nextItems(for: b.peer, limit: 10, now: Timestamp(millisecondsSince1970: Int64(Date().timeIntervalSince1970 * 1000))).count, 1,
                       "the holder keeps it queued")
        XCTAssertEqual(files(b.inbox), [])
        try FileManager.default.removeItem(atPath: filler)
        await b.waitForLog("the item fits in the inbox now; asking for it", seconds: 5)
        await b.waitForLog("item received", seconds: 10)
        await a.waitForLog("delivered", seconds: 10)
        XCTAssertEqual(files(b.inbox), ["big.bin"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: b.inbox + "/big.bin")), Data(bytes))
        await a.stop(); await b.stop()
    }

    func testAnItemThatExpiredOnTheWayIsGivenUpWithTheReason() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        // B's clock is 30 days ahead: the item's 7 days are over by B's clock.
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b", clockOffset: .seconds(30 * 86400))
        try a.drop("old.txt", bytes: randomBytes(100), for: b.peer)
        await a.waitForLog("peer refused an expired item")
        let failed = files(a.config.stateDirectory + "/failed")
        XCTAssertTrue(failed.contains { $0.hasSuffix("-old.txt") }, "\(failed)")
        let note = try failed.first { $0.hasSuffix(".json") }.map { try String(contentsOfFile: a.config.stateDirectory + "/failed/" + $0, encoding: .utf8) }
        XCTAssertTrue(note?.contains("expired") == true, note ?? "no note")
        XCTAssertEqual(files(b.inbox), [])
        await a.stop(); await b.stop()
    }

    /// The holder lost its ledger after the receiver recorded the item (the receipt never
    /// reached it): offered again under the same ID, the item is acknowledged, not delivered twice.
    func testAnItemOfferedAgainAfterItsReceiptWasLostIsNotDeliveredTwice() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b")
        try a.drop("log.txt", bytes: randomBytes(5000), for: b.peer)
        await a.waitForLog("delivered")
        await a.stop()
        // The payload goes back where it was (a rename keeps its inode and time, so its ID),
        // and the holder starts over without its ledger.
        let sent = a.config.stateDirectory + "/sent"
        let moved = try XCTUnwrap(files(sent).first { $0.hasSuffix("-log.txt") })
        try FileManager.default.createDirectory(atPath: a.outbox(for: b.peer), withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: sent + "/" + moved, toPath: a.outbox(for: b.peer) + "/log.txt")
        try FileManager.default.removeItem(atPath: a.config.stateDirectory)
        let again = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        await again.waitForLog("delivered")
        XCTAssertEqual(files(b.inbox), ["log.txt"], "one copy")
        XCTAssertEqual(b.log.filter { $0.contains("item received") }.count, 1)
        XCTAssertFalse(again.log.contains { $0.contains("item's bytes verified") }, "answered from the record: no byte sent again")
        await again.stop(); await b.stop()
    }
}

/// Message items: submitted through the API's backend, delivered once into the peer's inbox.
final class MessageItemTests: XCTestCase {
    func testAMessageItemArrivesOnceAsAFileInTheInbox() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b")
        let me = PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid())
        let item = try await a.daemon.apiSubmit(ItemSubmission(peer: b.peer.description, path: "", message: Array("level=1.2m".utf8)), caller: me)
        XCTAssertEqual(item.kind, .message)
        await b.waitForLog("message received")
        await a.waitForLog("delivered")
        let name = "message-\(item.id.description.prefix(8)).txt"
        XCTAssertEqual(files(b.inbox), [name])
        XCTAssertEqual(try String(contentsOfFile: b.inbox + "/" + name, encoding: .utf8), "level=1.2m")
        XCTAssertEqual(try a.ledger.item(item.id)?.state, .delivered)
        await a.stop(); await b.stop()
    }
}

/// Fails unless `body` throws an `APIError` with `status`.
func XCTAssertThrowsAPIError(_ status: Int, file: StaticString = #filePath, line: UInt = #line,
                             _ body: () async throws -> Void) async {
    do {
        try await body()
        XCTFail("no error (expected \(status))", file: file, line: line)
    } catch let e as APIError {
        XCTAssertEqual(e.status, status, "\(e)", file: file, line: line)
    } catch {
        XCTFail("\(error)", file: file, line: line)
    }
}
