import Foundation
@testable import PeerLinkStore
import XCTest

final class OutboundLedgerTests: XCTestCase {
    let day = Duration.seconds(86_400)

    func payload(_ dir: String, _ name: String, _ bytes: [UInt8]) throws -> OutboundItem.Payload {
        try DurableFile.makeDirectory(dir + "/outbox")
        try writeFile(dir + "/outbox/" + name, bytes)
        return .file(path: dir + "/outbox/" + name)
    }

    func testEnqueueIsIdempotentForTheSameID() throws {
        let dir = scratchDirectory(self)
        let ledger = try Ledger(root: dir + "/l", now: at(0))
        let p = try payload(dir, "a.txt", Array("hello".utf8))
        let first = try ledger.enqueue(id: itemID(1), for: bob, payload: p, priority: 1, ttl: day, now: at(10))
        guard case let .added(item) = first else { return XCTFail("\(first)") }
        XCTAssertEqual(item.size, 5)
        XCTAssertEqual(item.state, .queued)
        XCTAssertEqual(item.expires, at(10) + day)
        let again = try ledger.enqueue(id: itemID(1), for: bob, payload: p, priority: 9, ttl: .seconds(1), now: at(99))
        XCTAssertEqual(again, .existing(item), "nothing changed by the second enqueue")
        XCTAssertThrowsError(try ledger.enqueue(id: itemID(1), for: carol, payload: p, ttl: day, now: at(99))) {
            XCTAssertEqual($0 as? LedgerError, .conflictingItem(itemID(1)))
        }
        XCTAssertThrowsError(try ledger.enqueue(id: itemID(2), for: bob, payload: .file(path: dir + "/none"), ttl: day, now: at(0))) {
            XCTAssertEqual($0 as? LedgerError, .payloadMissing(dir + "/none"))
        }
        XCTAssertEqual(try ledger.nextItems(for: bob, now: at(11)).map(\.id), [itemID(1)])
    }

    func testNextItemsByPriorityThenAgeForOnePeer() throws {
        let dir = scratchDirectory(self)
        let ledger = try Ledger(root: dir + "/l", now: at(0))
        let plan: [(UInt8, Int, Int64)] = [(1, 0, 100), (2, 5, 300), (3, 0, 50), (4, 5, 200), (5, -1, 10)]
        for (n, priority, t) in plan {
            _ = try ledger.enqueue(id: itemID(n), for: bob, payload: .message([n]), priority: priority, ttl: day, now: at(t))
        }
        _ = try ledger.enqueue(id: itemID(9), for: carol, payload: .message([9]), priority: 99, ttl: day, now: at(0))
        XCTAssertEqual(try ledger.nextItems(for: bob, now: at(1000)).map(\.id), [4, 2, 3, 1, 5].map(itemID))
        XCTAssertEqual(try ledger.nextItems(for: bob, limit: 2, now: at(1000)).map(\.id), [4, 2].map(itemID))
        XCTAssertEqual(try ledger.nextItems(for: carol, now: at(1000)).map(\.id), [itemID(9)])
    }

    func testProgressIsTheReceiversFigure() throws {
        let dir = scratchDirectory(self)
        let ledger = try Ledger(root: dir + "/l", now: at(0))
        _ = try ledger.enqueue(id: itemID(1), for: bob, payload: .message(Array(repeating: 1, count: 100)), ttl: day, now: at(0))
        XCTAssertEqual(try ledger.recordProgress(itemID(1), acknowledged: 60).acknowledged, 60)
        XCTAssertEqual(try ledger.item(itemID(1))?.state, .sending)
        XCTAssertEqual(try ledger.recordProgress(itemID(1), acknowledged: 20).acknowledged, 20, "a receiver that lost bytes says so")
        XCTAssertEqual(try ledger.recordProgress(itemID(1), acknowledged: 1000).acknowledged, 100, "capped at the size")
        XCTAssertThrowsError(try ledger.recordProgress(itemID(7), acknowledged: 1)) {
            XCTAssertEqual($0 as? LedgerError, .unknownItem(itemID(7)))
        }
    }

    func testDeliveredPayloadIsMovedAsideWithItsReceipt() throws {
        let dir = scratchDirectory(self)
        let ledger = try Ledger(root: dir + "/l", now: at(0))
        let bytes = Array("the payload".utf8)
        let p = try payload(dir, "report.csv", bytes)
        _ = try ledger.enqueue(id: itemID(1), for: bob, payload: p, ttl: day, now: at(0))
        let receipt = DeliveryReceipt(itemID: itemID(1), size: 11, digest: ContentDigest.hex(ContentDigest.of(bytes: bytes)),
                                      receivedAt: at(500))
        let done = try ledger.markDelivered(itemID(1), receipt: receipt, now: at(600))
        XCTAssertEqual(done.state, .delivered)
        XCTAssertTrue(done.settled)
        XCTAssertEqual(done.receipt, receipt)
        XCTAssertEqual(done.acknowledged, 11)
        let archived = dir + "/l/sent/\(itemID(1))-report.csv"
        XCTAssertEqual(done.archivedPath, archived)
        XCTAssertEqual(readFile(archived), bytes)
        XCTAssertFalse(DurableFile.exists(dir + "/outbox/report.csv"))
        let note = try JSONSerialization.jsonObject(with: Data(readFile(dir + "/l/sent/\(itemID(1)).json") ?? [])) as? [String: Any]
        XCTAssertEqual(note?["state"] as? String, "delivered")
        XCTAssertEqual((note?["receipt"] as? [String: Any])?["digest"] as? String, receipt.digest)
        XCTAssertEqual(try ledger.markDelivered(itemID(1), receipt: receipt, now: at(700)), done, "idempotent")
        XCTAssertEqual(try ledger.nextItems(for: bob, now: at(700)), [])
        XCTAssertTrue(ledger.recovery.isEmpty)
    }

    func testExpiryMovesItemsAsideWithTheirReason() throws {
        let dir = scratchDirectory(self)
        let ledger = try Ledger(root: dir + "/l", now: at(0))
        let p = try payload(dir, "old.bin", [1, 2, 3])
        _ = try ledger.enqueue(id: itemID(1), for: bob, payload: p, ttl: .seconds(10), now: at(0))
        _ = try ledger.enqueue(id: itemID(2), for: bob, payload: .message([7]), ttl: .seconds(20), now: at(0))
        _ = try ledger.enqueue(id: itemID(3), for: bob, payload: .message([8]), ttl: day, now: at(0))
        XCTAssertEqual(try ledger.expire(now: at(9_999)), [])
        XCTAssertEqual(try ledger.nextItems(for: bob, now: at(10_000)).map(\.id), [2, 3].map(itemID),
                       "an item past its TTL is not offered even before the sweep")
        let expired = try ledger.expire(now: at(20_000))
        XCTAssertEqual(expired.map(\.id), [1, 2].map(itemID))
        XCTAssertEqual(expired.map(\.state), [.expired, .expired])
        XCTAssertTrue(expired.allSatisfy { $0.reason?.hasPrefix("time to live passed") ?? false }, "\(expired.map(\.reason))")
        XCTAssertEqual(readFile(dir + "/l/expired/\(itemID(1))-old.bin"), [1, 2, 3])
        XCTAssertTrue(DurableFile.exists(dir + "/l/expired/\(itemID(2)).json"))
        XCTAssertEqual(try ledger.expire(now: at(30_000)), [], "expired once")
        XCTAssertThrowsError(try ledger.markDelivered(itemID(1), receipt: DeliveryReceipt(itemID: itemID(1), size: 3, digest: "", receivedAt: at(0)), now: at(0))) {
            XCTAssertEqual($0 as? LedgerError, .notPending(itemID(1), .expired))
        }
        XCTAssertEqual(try ledger.items(in: [.queued]).map(\.id), [itemID(3)])
    }

    func testFailedItemsKeepTheirReason() throws {
        let dir = scratchDirectory(self)
        let ledger = try Ledger(root: dir + "/l", now: at(0))
        _ = try ledger.enqueue(id: itemID(1), for: bob, payload: try payload(dir, "x", [1]), ttl: day, now: at(0))
        let failed = try ledger.markFailed(itemID(1), reason: "peer refused: quota", now: at(5))
        XCTAssertEqual(failed.state, .failed)
        XCTAssertEqual(failed.reason, "peer refused: quota")
        XCTAssertEqual(readFile(dir + "/l/failed/\(itemID(1))-x"), [1])
    }

    /// A crash between the mark and the move leaves an unsettled item: the next open moves it.
    func testOpenFinishesAMoveACrashInterrupted() throws {
        let dir = scratchDirectory(self)
        let p = try payload(dir, "a", [42])
        do {
            let ledger = try Ledger(root: dir + "/l", now: at(0))
            _ = try ledger.enqueue(id: itemID(1), for: bob, payload: p, ttl: day, now: at(0))
            _ = try ledger.enqueue(id: itemID(2), for: bob, payload: try payload(dir, "b", [43]), ttl: day, now: at(0))
        }
        let db = try Database(path: dir + "/l/ledger.sqlite")
        try db.run("UPDATE outbound SET state = 'delivered', settled = 0")
        // Item 2's file was moved before the crash; item 1's was not.
        try DurableFile.move(dir + "/outbox/b", to: dir + "/l/sent/\(itemID(2))-b")
        let ledger = try Ledger(root: dir + "/l", now: at(1))
        XCTAssertEqual(ledger.recovery.settled, [1, 2].map(itemID))
        XCTAssertEqual(names(dir + "/outbox"), [])
        XCTAssertEqual(readFile(dir + "/l/sent/\(itemID(1))-a"), [42])
        XCTAssertEqual(readFile(dir + "/l/sent/\(itemID(2))-b"), [43])
        XCTAssertEqual(try ledger.item(itemID(2))?.settled, true)
        XCTAssertTrue(try Ledger(root: dir + "/l", now: at(2)).recovery.isEmpty)
    }

    func testDamagedRowIsAnErrorNotACrash() throws {
        let dir = scratchDirectory(self)
        let ledger = try Ledger(root: dir + "/l", now: at(0))
        _ = try ledger.enqueue(id: itemID(1), for: bob, payload: .message([1]), ttl: day, now: at(0))
        let db = try Database(path: dir + "/l/ledger.sqlite")
        try db.run("UPDATE outbound SET peer = 'not a peer'")
        XCTAssertThrowsError(try ledger.item(itemID(1))) { error in
            XCTAssertEqual((error as? DatabaseError)?.kind, .unexpectedValue, "\(error)")
        }
    }
}
