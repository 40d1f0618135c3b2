import Foundation
import PeerLinkStore
import XCTest

extension XCTestCase {
    /// What must hold after any crash: every file visible in the inbox (not hidden) is one
    /// whole item, intact.
    func checkNothingPartialVisible(_ dir: String, _ context: String, file: StaticString = #filePath, line: UInt = #line) throws {
        guard DurableFile.exists(dir + "/manifest.json") else { return }
        let manifest = try TortureManifest(dir: dir)
        let byName = Dictionary(uniqueKeysWithValues: manifest.items.map { ($0.name, $0) })
        for name in names(dir + "/receiver/inbox") where !name.hasPrefix(".") {
            guard let item = byName[name] else {
                XCTFail("\(context): inbox holds \(name), no item's name (a second landing?)", file: file, line: line)
                continue
            }
            XCTAssertEqual(sha256Hex(dir + "/receiver/inbox/" + name), item.digest, "\(context): \(name) visible but not intact",
                           file: file, line: line)
        }
    }

    /// What must hold once the workload finished: each item landed exactly once and intact,
    /// nothing partial left, each sent item moved aside once with its receipt, each expired
    /// item moved aside with its reason, and both ledgers agree and need no recovery.
    func checkConverged(_ dir: String, _ context: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let manifest = try TortureManifest(dir: dir)
        let inbox = dir + "/receiver/inbox"
        let sender = try Ledger(root: dir + "/sender", now: Timestamp(millisecondsSince1970: 0))
        let receiver = try Ledger(root: dir + "/receiver", now: Timestamp(millisecondsSince1970: 0))
        XCTAssertTrue(sender.recovery.isEmpty && receiver.recovery.isEmpty, "\(context): open after the end still recovered something",
                      file: file, line: line)
        let delivered = manifest.items.filter { !$0.expiring }
        XCTAssertEqual(names(inbox), delivered.map(\.name).sorted(), "\(context): inbox (hidden files included)", file: file, line: line)
        XCTAssertEqual(names(dir + "/outbox"), [], "\(context): outbox not emptied", file: file, line: line)
        XCTAssertEqual(names(dir + "/sender/sent").count, 2 * delivered.count, "\(context): sent/ holds one payload and one note per item",
                       file: file, line: line)
        let journal = RedoReport(dir: dir)
        for item in manifest.items {
            guard let id = ItemID(hex: item.id) else { XCTFail("bad id \(item.id)"); continue }
            let out = try sender.item(id)
            if item.expiring {
                XCTAssertEqual(out?.state, .expired, "\(context): item \(item.index)", file: file, line: line)
                XCTAssertTrue(out?.reason?.hasPrefix("time to live passed") ?? false, "\(context): \(String(describing: out?.reason))")
                XCTAssertEqual(sha256Hex(dir + "/sender/expired/\(id)-\(item.name)"), item.digest, "\(context): expired \(item.index)",
                               file: file, line: line)
                XCTAssertNil(try receiver.record(id), "\(context): expired item \(item.index) was received", file: file, line: line)
                continue
            }
            XCTAssertEqual(out?.state, .delivered, "\(context): item \(item.index)", file: file, line: line)
            XCTAssertEqual(out?.settled, true, "\(context): item \(item.index) settled", file: file, line: line)
            XCTAssertEqual(out?.receipt?.digest, item.digest, "\(context): receipt of \(item.index)", file: file, line: line)
            XCTAssertEqual(out?.archivedPath, dir + "/sender/sent/\(id)-\(item.name)")
            XCTAssertEqual(sha256Hex(dir + "/sender/sent/\(id)-\(item.name)"), item.digest, "\(context): sent \(item.index)",
                           file: file, line: line)
            XCTAssertTrue(DurableFile.exists(dir + "/sender/sent/\(id).json"), "\(context): receipt note \(item.index)", file: file, line: line)
            XCTAssertEqual(sha256Hex(inbox + "/" + item.name), item.digest, "\(context): landed \(item.index)", file: file, line: line)
            XCTAssertEqual(try receiver.record(id)?.landed, true, "\(context): record of \(item.index)", file: file, line: line)
            XCTAssertLessThanOrEqual(journal.newLandings[item.index] ?? 0, 1, "\(context): item \(item.index) landed as new twice",
                                     file: file, line: line)
        }
    }
}
