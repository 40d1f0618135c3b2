import CSQLite
import Foundation
@testable import PeerLinkStore
import XCTest

final class DatabaseTests: XCTestCase {
    func testOpensWithWALFullSyncAndForeignKeys() throws {
        let db = try Database(path: scratchDirectory(self) + "/a.sqlite")
        XCTAssertEqual(try db.query("PRAGMA journal_mode") { try $0.text(0) }, ["wal"])
        XCTAssertEqual(try db.query("PRAGMA synchronous") { try $0.integer(0) }, [2], "FULL")
        XCTAssertEqual(try db.query("PRAGMA foreign_keys") { try $0.integer(0) }, [1])
        XCTAssertEqual(try db.query("PRAGMA busy_timeout") { try $0.integer(0) }, [5000])
    }

    func testBindsAndReadsEveryType() throws {
        let db = try Database(path: scratchDirectory(self) + "/a.sqlite")
        try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)")
        try db.run("INSERT INTO t VALUES (?, ?, ?, ?, ?)", Int64.min, 2.5, "héllo", [UInt8](), Optional<String>.none)
        try db.run("INSERT INTO t VALUES (?, ?, ?, ?, ?)", 42, -0.25, "", [0, 255, 7] as [UInt8], "x")
        let rows = try db.query("SELECT i, r, s, b, n FROM t ORDER BY rowid") { row in
            (try row.integer(0), try row.real(1), try row.text(2), try row.blob(3), try row.optionalText(4))
        }
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual(rows[0].0, Int64.min)
        XCTAssertEqual(rows[0].1, 2.5)
        XCTAssertEqual(rows[0].2, "héllo")
        XCTAssertEqual(rows[0].3, [])
        XCTAssertNil(rows[0].4)
        XCTAssertEqual(rows[1].0, 42)
        XCTAssertEqual(rows[1].3, [0, 255, 7])
        XCTAssertEqual(rows[1].4, "x")
        XCTAssertEqual(try db.query("SELECT typeof(b) FROM t ORDER BY rowid") { try $0.text(0) }, ["blob", "blob"],
                       "an empty array binds as a blob, not NULL")
    }

    func testAValueOfTheWrongTypeIsAnErrorNamingTheColumn() throws {
        let db = try Database(path: scratchDirectory(self) + "/a.sqlite")
        try db.execute("CREATE TABLE t (size INTEGER); INSERT INTO t VALUES ('lots')")
        XCTAssertThrowsError(try db.query("SELECT size FROM t") { try $0.integer(0) }) { error in
            guard let e = error as? DatabaseError else { return XCTFail("\(error)") }
            XCTAssertEqual(e.kind, .unexpectedValue)
            XCTAssertTrue(e.description.contains("column size is not an integer"), e.description)
        }
    }

    func testWrongParameterCountIsRefused() throws {
        let db = try Database(path: scratchDirectory(self) + "/a.sqlite")
        try db.execute("CREATE TABLE t (x)")
        XCTAssertThrowsError(try db.run("INSERT INTO t VALUES (?)", 1, 2))
    }

    func testWriteCommitsOrRollsBackWhole() throws {
        struct Refused: Error {}
        let db = try Database(path: scratchDirectory(self) + "/a.sqlite")
        try db.execute("CREATE TABLE t (x INTEGER UNIQUE)")
        try db.write { db in try db.run("INSERT INTO t VALUES (1)") }
        XCTAssertThrowsError(try db.write { db in
            try db.run("INSERT INTO t VALUES (2)")
            throw Refused()
        })
        XCTAssertThrowsError(try db.write { db in
            try db.run("INSERT INTO t VALUES (3)")
            try db.run("INSERT INTO t VALUES (1)")
        }) { error in XCTAssertEqual((error as? DatabaseError)?.kind, .constraint, "\(error)") }
        XCTAssertEqual(try db.query("SELECT x FROM t") { try $0.integer(0) }, [1])
        // Still usable after the rollbacks.
        try db.write { db in try db.run("INSERT INTO t VALUES (4)") }
        XCTAssertEqual(try db.query("SELECT count(*) FROM t") { try $0.integer(0) }, [2])
    }

    func testMigrationsRunOnceInOrderAndANewerFileIsRefused() throws {
        let path = scratchDirectory(self) + "/a.sqlite"
        let v1 = [Migration(version: 1, sql: "CREATE TABLE t (x)")]
        let v2 = v1 + [Migration(version: 2, sql: "ALTER TABLE t ADD COLUMN y; INSERT INTO t VALUES (1, 2)")]
        do {
            let db = try Database(path: path)
            try db.migrate(v1)
            XCTAssertEqual(try db.userVersion(), 1)
            try db.migrate(v1)
        }
        do {
            let db = try Database(path: path)
            try db.migrate(v2)
            try db.migrate(v2)
            XCTAssertEqual(try db.userVersion(), 2)
            XCTAssertEqual(try db.query("SELECT count(*) FROM t") { try $0.integer(0) }, [1], "step 2 ran once")
        }
        let db = try Database(path: path)
        XCTAssertThrowsError(try db.migrate(v1)) { error in
            XCTAssertEqual((error as? DatabaseError)?.kind, .newerSchema(found: 2, known: 1), "\(error)")
        }
    }

    func testAFailedMigrationLeavesTheFileAtTheLastWholeStep() throws {
        let path = scratchDirectory(self) + "/a.sqlite"
        let db = try Database(path: path)
        let steps = [Migration(version: 1, sql: "CREATE TABLE t (x)"),
                     Migration(version: 2, sql: "CREATE TABLE u (y); CREATE TABLE t (z)")]
        XCTAssertThrowsError(try db.migrate(steps))
        XCTAssertEqual(try db.userVersion(), 1)
        XCTAssertEqual(try db.query("SELECT count(*) FROM sqlite_master WHERE name = 'u'") { try $0.integer(0) }, [0])
    }

    func testAFileThatIsNotADatabaseGivesAClearError() throws {
        let path = scratchDirectory(self) + "/ledger.sqlite"
        try writeFile(path, Array("this is not a database, just text that goes on ".utf8) + [UInt8](repeating: 0x5A, count: 4000))
        XCTAssertThrowsError(try Database(path: path)) { error in
            guard let e = error as? DatabaseError else { return XCTFail("\(error)") }
            XCTAssertEqual(e.kind, .notADatabase)
            XCTAssertEqual(e.code & 0xff, SQLITE_NOTADB)
            XCTAssertTrue(e.description.contains(path), e.description)
            XCTAssertTrue(e.description.contains("not a database"), e.description)
        }
        XCTAssertThrowsError(try Ledger(root: DurableFile.parent(of: path), now: at(0))) { error in
            XCTAssertEqual((error as? DatabaseError)?.kind, .notADatabase, "\(error)")
        }
    }

    func testAPathThatCannotBeOpenedNamesThePath() throws {
        let path = scratchDirectory(self) + "/no/such/dir/a.sqlite"
        XCTAssertThrowsError(try Database(path: path)) { error in
            guard let e = error as? DatabaseError else { return XCTFail("\(error)") }
            XCTAssertEqual(e.kind, .cannotOpen)
            XCTAssertTrue(e.description.contains(path), e.description)
        }
    }
}
