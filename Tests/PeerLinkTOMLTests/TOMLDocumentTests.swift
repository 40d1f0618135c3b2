import PeerLinkTOML
import XCTest

/// TOML files as PeerLink reads them: TOMLKit's parse, the values it gives, errors that name
/// the line, and typed fields that refuse typos and wrong types with the key's line.
final class TOMLDocumentTests: XCTestCase {
    func testValuesOfEveryTypeUsed() throws {
        let doc = try TOMLDocument(parsing: """
        # comment
        name = "x # not a comment"   # trailing comment
        n = 1_000
        f = 0.05
        yes = true
        list = [1, 2, "three"]
        multi = \"\"\"
        two
        lines\"\"\"

        [table]
        key = "v\\"q\\""
        inline = { a = 1 }

        [[item]]
        a = 1
        [[item]]
        a = 2
        """)
        XCTAssertEqual(doc.root["name"], .string("x # not a comment"))
        XCTAssertEqual(doc.root["n"], .integer(1000))
        XCTAssertEqual(doc.root["f"], .float(0.05))
        XCTAssertEqual(doc.root["yes"], .bool(true))
        XCTAssertEqual(doc.root["list"], .array([.integer(1), .integer(2), .string("three")]))
        XCTAssertEqual(doc.root["multi"], .string("two\nlines"))
        XCTAssertEqual(doc.root["table"], .table(["key": .string("v\"q\""), "inline": .table(["a": .integer(1)])]))
        XCTAssertEqual(doc.root["item"], .array([.table(["a": .integer(1)]), .table(["a": .integer(2)])]))
        XCTAssertEqual(doc.line(of: "n"), 3)
        XCTAssertEqual(doc.line(of: "table.key"), 12)
        XCTAssertEqual(doc.line(of: "table.inline.a"), 13, "inside an inline table: the table's line")
        XCTAssertEqual(doc.line(of: "item[2].a"), 18)
        XCTAssertEqual(doc.line(of: "item[2]"), 17)
        XCTAssertNil(doc.line(of: "missing"))
    }

    func testSyntaxErrorsNameTheLine() {
        let cases: [(String, Int)] = [
            ("a = 1\nb = \"open", 2),
            ("a = 1\na = 2", 2),
            ("[t]\n[t]", 2),
            ("x = yes", 1),
            ("just text", 1),
            ("\n\n[[a]\n", 3),
            ("a = [1 2]", 1),
            ("a = 1 2", 1),
            ("s = \"\\q\"", 1),
        ]
        for (text, line) in cases {
            XCTAssertThrowsError(try TOMLDocument(parsing: text), text) { e in
                guard let e = e as? TOMLError else { return XCTFail("\(e)") }
                XCTAssertEqual(e.line, line, "\(text): \(e)")
                XCTAssertFalse(e.message.isEmpty)
            }
        }
        XCTAssertThrowsError(try TOMLDocument(parsing: "\nwhen = 2026-11-27")) { e in
            XCTAssertEqual((e as? TOMLError)?.line, 2)
            XCTAssertTrue("\(e)".contains("dates and times are not used"), "\(e)")
        }
    }

    func testFieldsNameTheKeyItsLineAndWhatIsAllowed() throws {
        let doc = try TOMLDocument(parsing: """
        accept = "maybe"
        size = "big"

        [peer]
        quota = -1
        colour = "red"
        """)
        var f = TOMLFields(doc, unknownKeyHint: "see docs/CONFIG.md")
        XCTAssertThrowsError(try f.choice("accept", ["known", "all", "none"])) { e in
            XCTAssertEqual("\(e)", "line 1: accept = \"maybe\" is not allowed; use one of: known, all, none")
        }
        XCTAssertThrowsError(try f.int("size", min: 0, max: 10)) { e in
            XCTAssertEqual("\(e)", "line 2: size must be a whole number, not a string")
        }
        var peer = try XCTUnwrap(try f.table("peer"))
        XCTAssertThrowsError(try peer.int("quota", min: 0, max: 10)) { e in
            XCTAssertEqual((e as? TOMLFieldError)?.key, "peer.quota")
            XCTAssertEqual("\(e)", "line 5: peer.quota = -1 is outside 0…10")
        }
        XCTAssertThrowsError(try peer.noOtherKeys()) { e in
            XCTAssertEqual("\(e)", "line 6: unknown key peer.colour (see docs/CONFIG.md)")
        }
        XCTAssertNoThrow(try f.noOtherKeys(), "every root key was read")
        XCTAssertNil(try f.string("absent"))
        XCTAssertThrowsError(try f.requiredString("absent")) { e in XCTAssertEqual("\(e)", "absent is missing") }
    }
}
