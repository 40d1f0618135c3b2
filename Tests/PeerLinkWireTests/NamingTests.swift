import Foundation
import XCTest
@testable import PeerLinkWire

final class ServiceTypeTests: XCTestCase {
    func testValid() throws {
        for s in ["a", "field-demo", "abc123", "a-b-c", "123a", "x1-2y", "abcdefghijklmno", "9-z"] {
            XCTAssertEqual(try ServiceType(s).name, s)
        }
        XCTAssertEqual(try ServiceType("field-demo").dnssdTCP, "_field-demo._tcp")
        XCTAssertEqual(try ServiceType("field-demo").dnssdUDP, "_field-demo._udp")
        XCTAssertEqual(try ServiceType("chat").description, "chat")
    }

    func testInvalid() {
        let cases = [
            "", "abcdefghijklmnop", "Field", "ABC", "-ab", "ab-", "a--b", "-", "123", "0", "1-2",
            "a_b", "_tcp", "café", "a b", "a.b", "ａｂ", "a\u{0}", "a/b",
        ]
        for s in cases {
            let e = assertWireError(try ServiceType(s), "'\(s)'")
            XCTAssertEqual(e?.isInvalid, true, "'\(s)'")
        }
    }

    func testMessagesExplainTheRule() {
        XCTAssertEqual(assertWireError(try ServiceType(""))?.description.contains("empty"), true)
        XCTAssertEqual(assertWireError(try ServiceType(String(repeating: "a", count: 16)))?.description.contains("16 characters"), true)
        XCTAssertEqual(assertWireError(try ServiceType("a--b"))?.description.contains("adjacent"), true)
        XCTAssertEqual(assertWireError(try ServiceType("42"))?.description.contains("letter"), true)
    }
}

final class DiscoveryInfoTests: XCTestCase {
    func testKeyRules() {
        XCTAssertEqual(assertWireError(try DiscoveryInfo(["": "v"]))?.isInvalid, true)
        XCTAssertEqual(assertWireError(try DiscoveryInfo(["a=b": "v"]))?.isInvalid, true)
        XCTAssertEqual(assertWireError(try DiscoveryInfo(["_x": "v"]))?.isInvalid, true)
        XCTAssertNoThrow(try DiscoveryInfo(["x_": "v", "k": "", "a b": "==", "~": "ü"]))
    }

    func testKeysArePrintableASCIIAndUniqueIgnoringCase() {
        for bad in ["ü", "a\tb", "a\u{7f}", "\u{1}"] {
            XCTAssertEqual(assertWireError(try DiscoveryInfo([bad: "v"]))?.isInvalid, true, bad.debugDescription)
        }
        XCTAssertEqual(assertWireError(try DiscoveryInfo(["Room": "1", "room": "2"]))?.isInvalid, true)
        XCTAssertEqual(assertWireError(try DiscoveryInfo(arguments: ["Room=1", "ROOM=2"]))?.isInvalid, true)
    }

    func testInfoSurvivesTXT() throws {
        let info = try DiscoveryInfo(arguments: ["Room=kitchen", "v=2", "flag="])
        XCTAssertEqual(try TXTRecord.decode(TXTRecord.encode(info.entries)), info.entries)
    }

    func testEntryLimit() throws {
        // key + "=" + value: 1 + 1 + 253 = 255 is fine, 256 is not.
        XCTAssertNoThrow(try DiscoveryInfo(["k": String(repeating: "v", count: 253)]))
        let e = assertWireError(try DiscoveryInfo(["k": String(repeating: "v", count: 254)]))
        XCTAssertEqual(e?.isLimitExceeded, true)
        // Multi-byte characters count in bytes.
        XCTAssertEqual(assertWireError(try DiscoveryInfo(["k": String(repeating: "é", count: 127)]))?.isLimitExceeded, true)
        XCTAssertNoThrow(try DiscoveryInfo(["k": String(repeating: "é", count: 126) + "v"]))
    }

    func testTotalLimit() throws {
        // Each entry counts 1 (length byte) + key + 1 + value: 2 × (1 + 1 + 1 + 197) = 400.
        let ok = ["a": String(repeating: "v", count: 197), "b": String(repeating: "v", count: 197)]
        XCTAssertNoThrow(try DiscoveryInfo(ok))
        var over = ok
        over["b"] = String(repeating: "v", count: 198)
        let e = assertWireError(try DiscoveryInfo(over))
        XCTAssertEqual(e, .limitExceeded(field: "discovery info size in bytes", value: 401, limit: 400))
    }

    func testArguments() throws {
        let info = try DiscoveryInfo(arguments: ["room=kitchen", "eq=a=b", "empty="])
        XCTAssertEqual(info.entries, ["room": "kitchen", "eq": "a=b", "empty": ""])
        XCTAssertEqual(info["room"], "kitchen")
        XCTAssertNil(info["nope"])
        XCTAssertFalse(info.isEmpty)
        XCTAssertEqual(Array(info).count, 3)
        XCTAssertTrue(DiscoveryInfo().isEmpty)
        XCTAssertTrue(try DiscoveryInfo(arguments: []).isEmpty)
    }

    func testArgumentErrors() {
        let dup = assertWireError(try DiscoveryInfo(arguments: ["a=1", "a=2"]))
        XCTAssertEqual(dup?.description.contains("more than once"), true)
        let noEq = assertWireError(try DiscoveryInfo(arguments: ["novalue"]))
        XCTAssertEqual(noEq?.description.contains("key=value"), true)
        XCTAssertEqual(assertWireError(try DiscoveryInfo(arguments: ["=v"]))?.isInvalid, true)
        XCTAssertEqual(assertWireError(try DiscoveryInfo(arguments: ["_id=x"]))?.isInvalid, true)
    }
}

final class Base32Tests: XCTestCase {
    /// RFC 4648 §10, lowercased and without padding.
    let vectors: [(String, String)] = [
        ("", ""), ("f", "my"), ("fo", "mzxq"), ("foo", "mzxw6"), ("foob", "mzxw6yq"),
        ("fooba", "mzxw6ytb"), ("foobar", "mzxw6ytboi"),
    ]

    func testRFC4648Vectors() {
        for (plain, enc) in vectors {
            XCTAssertEqual(Base32.encode(bytes(plain)), enc)
            XCTAssertEqual(Base32.decode(enc), bytes(plain))
            XCTAssertEqual(Base32.decode(enc.uppercased()), bytes(plain))
        }
    }

    func testAllByteValuesRoundTrip() {
        let all = (0...255).map { UInt8($0) }
        for n in 0...all.count where n % 17 == 0 || n < 12 {
            let data = Array(all.prefix(n))
            XCTAssertEqual(Base32.decode(Base32.encode(data)), data)
        }
    }

    func testInvalid() {
        for s in ["0", "1", "8", "9", "my=", "my======", "m y", "m-y", "é", "m", "mzx", "mzxw6y", "mz", "mzxr"] {
            XCTAssertNil(Base32.decode(s), s)
        }
    }
}

final class PeerIDTests: XCTestCase {
    let sample: [UInt8] = (0..<20).map { UInt8($0 &* 13 &+ 5) }

    func testTextRoundTrip() throws {
        let id = try PeerID(bytes: sample)
        XCTAssertEqual(id.description.count, 32)
        XCTAssertEqual(id.description, id.description.lowercased())
        XCTAssertEqual(try PeerID(parsing: id.description), id)
        XCTAssertEqual(id.short, String(id.description.prefix(8)))
    }

    func testUppercaseAccepted() throws {
        let id = try PeerID(bytes: sample)
        let parsed = try PeerID(parsing: id.description.uppercased())
        XCTAssertEqual(parsed, id)
        XCTAssertEqual(parsed.description, id.description)
    }

    func testWrongLengthAndCharacters() throws {
        let text = try PeerID(bytes: sample).description
        let head: String = String(text.dropLast())
        let head2: String = String(text.dropLast(2))
        var bads: [String] = ["", head, text + "a", String(repeating: "a", count: 40)]
        bads.append(head + "1")
        bads.append(head + "8")
        bads.append(head + "=")
        bads.append(head2 + "é")
        bads.append(" " + String(text.dropFirst()))
        for bad in bads {
            XCTAssertEqual(assertWireError(try PeerID(parsing: bad))?.isInvalid, true, bad)
        }
        XCTAssertEqual(assertWireError(try PeerID(bytes: Array(sample.dropLast())))?.isInvalid, true)
        XCTAssertEqual(assertWireError(try PeerID(bytes: sample + [0]))?.isInvalid, true)
    }

    func testDigestPrefix() {
        let digest = (0..<32).map { UInt8($0) }
        XCTAssertEqual(PeerID(digest: digest).bytes, Array(digest.prefix(20)))
    }

    func testOrderingAndCodable() throws {
        let a = try PeerID(bytes: [UInt8](repeating: 0, count: 20))
        let b = try PeerID(bytes: [UInt8](repeating: 0, count: 19) + [1])
        XCTAssertLessThan(a, b)
        XCTAssertEqual(a.description, String(repeating: "a", count: 32))
        let json = try JSONEncoder().encode([b])
        XCTAssertEqual(String(decoding: json, as: UTF8.self), "[\"\(b.description)\"]")
        XCTAssertEqual(try JSONDecoder().decode([PeerID].self, from: json), [b])
        XCTAssertThrowsError(try JSONDecoder().decode([PeerID].self, from: Data("[\"nope\"]".utf8)))
    }
}

final class DeframerTests: XCTestCase {
    func testFrameLayout() throws {
        XCTAssertEqual(try LengthPrefixedDeframer.frame([1, 2, 3]), [0, 3, 1, 2, 3])
        XCTAssertEqual(try LengthPrefixedDeframer.frame([UInt8](repeating: 7, count: 300)).prefix(2), [1, 44])
        XCTAssertEqual(try LengthPrefixedDeframer.frame([UInt8](repeating: 0, count: 65535)).count, 65537)
        let e = assertWireError(try LengthPrefixedDeframer.frame([UInt8](repeating: 0, count: 65536)))
        XCTAssertEqual(e, .limitExceeded(field: "Noise message size", value: 65536, limit: 65535))
    }

    func testByteAtATime() throws {
        let msgs: [[UInt8]] = [[1], Array(0..<200), [UInt8](repeating: 9, count: 1000), [42, 43]]
        let stream = try msgs.flatMap { try LengthPrefixedDeframer.frame($0) }
        var d = LengthPrefixedDeframer()
        var out: [[UInt8]] = []
        for b in stream {
            d.append([b])
            while let m = try d.next() { out.append(m) }
        }
        XCTAssertEqual(out, msgs)
        XCTAssertEqual(d.pendingBytes, 0)
    }

    func testSeveralMessagesInOneChunkAndSplitAcrossChunks() throws {
        let msgs: [[UInt8]] = [[1, 2], [3], Array(repeating: 5, count: 70_000 / 2)]
        let stream = try msgs.flatMap { try LengthPrefixedDeframer.frame($0) }
        var d = LengthPrefixedDeframer()
        d.append(Array(stream.prefix(9)))  // two whole messages and 2 bytes of the third
        XCTAssertEqual(try d.next(), [1, 2])
        XCTAssertEqual(try d.next(), [3])
        XCTAssertNil(try d.next())
        XCTAssertEqual(d.pendingBytes, 2)
        d.append(Array(stream.dropFirst(9).dropLast(1)))
        XCTAssertNil(try d.next())
        d.append([stream.last!])
        XCTAssertEqual(try d.next(), msgs[2])
        XCTAssertNil(try d.next())
        XCTAssertEqual(d.pendingBytes, 0)
    }

    func testTakeGivesTheSameMessagesWhereverTheReadsAreCut() throws {
        let msgs: [[UInt8]] = [[1], Array(0..<255), [UInt8](repeating: 9, count: 300), [42, 43]]
        let stream = try msgs.flatMap { try LengthPrefixedDeframer.frame($0) }
        for cut1 in 0...stream.count {
            for cut2 in [cut1, min(stream.count, cut1 + 1), min(stream.count, cut1 + 2), stream.count] {
                var d = LengthPrefixedDeframer()
                var out: [[UInt8]] = []
                for (from, to) in [(0, cut1), (cut1, cut2), (cut2, stream.count)] {
                    try Array(stream[from..<to]).withUnsafeBytes { try d.take($0) { out.append($0) } }
                }
                XCTAssertEqual(out, msgs, "reads cut at \(cut1) and \(cut2)")
                XCTAssertEqual(d.pendingBytes, 0)
            }
        }
    }

    func testTakeStopsAtAZeroLengthAfterTheMessagesBeforeIt() throws {
        var d = LengthPrefixedDeframer()
        var out: [[UInt8]] = []
        XCTAssertThrowsError(try [UInt8]([0, 1, 7, 0, 0, 0, 1, 8]).withUnsafeBytes { try d.take($0) { out.append($0) } })
        XCTAssertEqual(out, [[7]])
        XCTAssertThrowsError(try [UInt8]([0, 1, 9]).withUnsafeBytes { try d.take($0) { out.append($0) } }, "stays failed")
        XCTAssertEqual(out, [[7]])
    }

    func testLargestMessage() throws {
        var d = LengthPrefixedDeframer()
        let big = [UInt8](repeating: 0xee, count: 65535)
        d.append(try LengthPrefixedDeframer.frame(big) + [0])
        XCTAssertEqual(try d.next(), big)
        XCTAssertNil(try d.next())
        XCTAssertEqual(d.pendingBytes, 1)
    }

    func testZeroLengthRejected() throws {
        var d = LengthPrefixedDeframer()
        d.append([0, 1, 7, 0, 0, 0, 1, 8])
        XCTAssertEqual(try d.next(), [7])
        let e = assertWireError(try d.next())
        XCTAssertEqual(e?.isInvalid, true)
        XCTAssertEqual(e?.description.contains("zero-length"), true)
    }
}

final class WireErrorDescriptionTests: XCTestCase {
    func testDescriptionsAreReadableSentences() throws {
        let cases: [(WireError, String)] = [
            (.truncated(field: "ack", needed: 8, available: 3), "truncated input: ack needs 8 byte(s), 3 left"),
            (.trailingBytes(2), "malformed input: 2 unexpected byte(s) after the end of the structure"),
            (.unknownType(context: "frame", value: 0xfe), "unknown frame type 0xfe"),
            (.limitExceeded(field: "frame size", value: 70000, limit: 65519), "frame size is 70000, above the limit of 65519"),
            (.invalid(field: "hello", reason: "no display name"), "invalid hello: no display name"),
        ]
        for (e, text) in cases {
            XCTAssertEqual(e.description, text)
            XCTAssertEqual("\(e)", text)
        }
        // Errors from real inputs read as sentences naming the field.
        let seq0 = assertWireError(try Frame.decode([3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1]))
        XCTAssertEqual(seq0?.description, "invalid sequence number: must start at 1")
        let trunc = assertWireError(try Frame.decode([4, 0, 0]))
        XCTAssertEqual(trunc?.description, "truncated input: ack needs 8 byte(s), 2 left")
        let st = assertWireError(try ServiceType("Bad"))
        XCTAssertEqual(st?.description, "invalid service type 'Bad': only lowercase ASCII letters, digits and hyphens are allowed")
        let pid = assertWireError(try PeerID(parsing: "xyz"))
        XCTAssertEqual(pid?.description.hasPrefix("invalid peer ID: 'xyz' is not 32 base32 characters"), true)
    }
}
