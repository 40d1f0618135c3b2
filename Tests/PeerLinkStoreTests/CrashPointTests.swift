import Foundation
@testable import PeerLinkStore
import XCTest

final class CrashPointTests: XCTestCase {
    func testParsesNameAndHit() {
        XCTAssertNil(CrashPoint.parse(nil))
        XCTAssertNil(CrashPoint.parse(""))
        XCTAssertEqual(CrashPoint.parse("inbox.land.afterLink")?.name, "inbox.land.afterLink")
        XCTAssertEqual(CrashPoint.parse("inbox.land.afterLink")?.at, 1)
        XCTAssertEqual(CrashPoint.parse("outbox.settle.afterMove:7")?.name, "outbox.settle.afterMove")
        XCTAssertEqual(CrashPoint.parse("outbox.settle.afterMove:7")?.at, 7)
        XCTAssertEqual(CrashPoint.parse("x:0")?.name, "x:0", "a hit counts from 1; 0 is part of the name")
    }

    func testNamesAreUnique() {
        XCTAssertEqual(Set(CrashPoint.all).count, CrashPoint.all.count)
    }

    /// docs/STORE.md lists every point (a table row starting with the name in backticks).
    func testTheDocumentListsEveryPoint() throws {
        let doc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/STORE.md")
        let text = try String(contentsOf: doc, encoding: .utf8)
        let listed = text.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            return line.dropFirst(3).split(separator: "`").first.map(String.init)
        }
        XCTAssertEqual(Set(listed), Set(CrashPoint.all + [TortureRun.chunkPoint]), "docs/STORE.md's crash point table")
    }
}
