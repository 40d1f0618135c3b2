import Foundation
@testable import PeerLinkStore
import XCTest

final class InboundLedgerTests: XCTestCase {
    func digest(_ b: [UInt8]) -> [UInt8] { ContentDigest.of(bytes: b) }

    func testARecordIsNewOnceThenADuplicate() throws {
        let ledger = try Ledger(root: scratchDirectory(self), now: at(0))
        let first = try ledger.recordReceived(itemID(1), from: alice, size: 3, digest: digest([1, 2, 3]), keepUntil: at(1000), now: at(5))
        XCTAssertTrue(first.isNew)
        XCTAssertEqual(first.record.receipt.receivedAt, at(5))
        let second = try ledger.recordReceived(itemID(1), from: alice, size: 3, digest: digest([1, 2, 3]), keepUntil: at(9000), now: at(6))
        XCTAssertEqual(second, .duplicate(first.record), "the first record stands")
    }

    func testLandsAtomicallyUnderItsNameAndRefusesADuplicate() throws {
        let dir = scratchDirectory(self)
        let ledger = try Ledger(root: dir, now: at(0))
        let bytes = Array("field notes".utf8)
        try writeFile(ledger.partialFile(for: itemID(1)), bytes)
        XCTAssertEqual(ledger.partialBytes(for: itemID(1)), 11)
        XCTAssertEqual(names(dir + "/inbox"), [".\(itemID(1)).part"], "partial files are hidden")
        let landed = try ledger.land(itemID(1), from: alice, name: "../notes.txt", size: 11, digest: digest(bytes),
                                     keepUntil: at(100), now: at(1))
        XCTAssertEqual(landed, .new(try XCTUnwrap(ledger.record(itemID(1))), path: dir + "/inbox/notes.txt"))
        XCTAssertEqual(names(dir + "/inbox"), ["notes.txt"])
        XCTAssertEqual(readFile(dir + "/inbox/notes.txt"), bytes)

        // Sent again (the sender never heard the acknowledgement): not landed twice.
        try writeFile(ledger.partialFile(for: itemID(1)), bytes)
        let again = try ledger.land(itemID(1), from: alice, name: "notes.txt", size: 11, digest: digest(bytes),
                                    keepUntil: at(100), now: at(2))
        XCTAssertEqual(again, .duplicate(landed.record))
        XCTAssertEqual(names(dir + "/inbox"), ["notes.txt"])
    }

    func testANameAlreadyTakenGetsTheItemsID() throws {
        let dir = scratchDirectory(self)
        let ledger = try Ledger(root: dir, now: at(0))
        try writeFile(dir + "/inbox/photo.jpg", [9])
        try writeFile(ledger.partialFile(for: itemID(2)), [1])
        let out = try ledger.land(itemID(2), from: alice, name: "photo.jpg", size: 1, digest: digest([1]), keepUntil: at(9), now: at(1))
        XCTAssertEqual(out.record.name, "\(itemID(2))-photo.jpg")
        XCTAssertEqual(readFile(dir + "/inbox/photo.jpg"), [9], "the file already there is untouched")
    }

    func testContentThatDoesNotMatchIsRefusedAndDropped() throws {
        let dir = scratchDirectory(self)
        let ledger = try Ledger(root: dir, now: at(0))
        try writeFile(ledger.partialFile(for: itemID(3)), [1, 2, 4])
        XCTAssertThrowsError(try ledger.land(itemID(3), from: alice, name: "x", size: 3, digest: digest([1, 2, 3]), keepUntil: at(9), now: at(1))) {
            guard case .contentMismatch(itemID(3), _, _)? = $0 as? LedgerError else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(names(dir + "/inbox"), [])
        XCTAssertNil(try ledger.record(itemID(3)), "nothing recorded: the sender sends again")
    }

    func testRecordsAreKeptUntilKeepUntilThenPurged() throws {
        let ledger = try Ledger(root: scratchDirectory(self), now: at(0))
        _ = try ledger.recordReceived(itemID(1), from: alice, size: 1, digest: digest([1]), keepUntil: at(100), now: at(0))
        _ = try ledger.recordReceived(itemID(2), from: alice, size: 1, digest: digest([2]), keepUntil: at(200), now: at(0))
        XCTAssertEqual(try ledger.purgeRecords(now: at(99)), 0)
        XCTAssertEqual(try ledger.purgeRecords(now: at(100)), 1)
        XCTAssertNil(try ledger.record(itemID(1)))
        XCTAssertNotNil(try ledger.record(itemID(2)))
        XCTAssertTrue(try ledger.recordReceived(itemID(1), from: alice, size: 1, digest: digest([1]), keepUntil: at(300), now: at(101)).isNew,
                      "past keepUntil an ID is new again: keepUntil must outlast the item's TTL")
    }

    /// Each state a crash can leave a landing in, finished (or undone) at the next open.
    func testOpenFinishesLandingsACrashInterrupted() throws {
        let dir = scratchDirectory(self)
        do {
            let ledger = try Ledger(root: dir, now: at(0))
            for n: UInt8 in 1...4 { try writeFile(ledger.partialFile(for: itemID(n)), [n]) }
        }
        let db = try Database(path: dir + "/ledger.sqlite")
        for n: UInt8 in 1...4 {
            try db.run("INSERT INTO inbound VALUES (?, ?, 1, ?, 0, 100, ?, 0)", itemID(n).bytes, alice.description, digest([n]), "f\(n)")
        }
        // 1: recorded only. 2: linked, partial name still there. 3: linked and unlinked. 4: both gone.
        try DurableFile.link(dir + "/inbox/.\(itemID(2)).part", to: dir + "/inbox/f2")
        try DurableFile.move(dir + "/inbox/.\(itemID(3)).part", to: dir + "/inbox/f3")
        try DurableFile.remove(dir + "/inbox/.\(itemID(4)).part")
        let ledger = try Ledger(root: dir, now: at(1))
        XCTAssertEqual(ledger.recovery.landed, [1, 2, 3].map(itemID))
        XCTAssertEqual(ledger.recovery.dropped, [itemID(4)])
        XCTAssertEqual(names(dir + "/inbox"), ["f1", "f2", "f3"])
        for n: UInt8 in 1...3 {
            XCTAssertEqual(readFile(dir + "/inbox/f\(n)"), [n])
            XCTAssertEqual(try ledger.record(itemID(n))?.landed, true)
        }
        XCTAssertNil(try ledger.record(itemID(4)))
    }
}
