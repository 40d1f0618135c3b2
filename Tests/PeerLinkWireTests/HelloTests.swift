import XCTest
@testable import PeerLinkWire

final class HelloTests: XCTestCase {
    let token: [UInt8] = Array(1...16)

    /// Builds a hello by hand: `major minor` then the TLVs given.
    func raw(major: UInt8 = 1, minor: UInt8 = UInt8(PeerLinkProtocol.minor), _ tlvs: [(UInt8, [UInt8])]) -> [UInt8] {
        var w = WireWriter()
        w.u8(major); w.u8(minor)
        for (t, v) in tlvs { w.u8(t); w.u16(UInt16(v.count)); w.append(v) }
        return w.bytes
    }

    func be32(_ v: UInt32) -> [UInt8] { var w = WireWriter(); w.u32(v); return w.bytes }

    func testRoundTrip() throws {
        for h in [
            Hello(displayName: "Alice's laptop", sessionToken: token),
            Hello(displayName: "ü", maxFrame: 1024, sessionToken: [UInt8](repeating: 0, count: 16)),
            Hello(displayName: String(repeating: "n", count: 63), maxFrame: 4096, sessionToken: token, major: 1, minor: 7),
        ] {
            let d = try Hello.decode(h.encode())
            XCTAssertEqual(d, h)
            XCTAssertEqual(d.encode(), h.encode())
        }
    }

    func testDatagramPort() throws {
        let h = Hello(displayName: "u", sessionToken: token, datagramPort: 40_000)
        XCTAssertEqual(try Hello.decode(h.encode()), h)
        XCTAssertEqual(try Hello.decode(h.encode()).datagramPort, 40_000)
        XCTAssertNil(try Hello.decode(Hello(displayName: "u", sessionToken: token).encode()).datagramPort)
        XCTAssertEqual(try Hello.decode(raw([(1, bytes("b")), (3, token), (4, [0x01, 0xbb])])).datagramPort, 443)
        XCTAssertEqual(assertWireError(try Hello.decode(raw([(1, bytes("b")), (3, token), (4, [0, 0])])))?.isInvalid, true)
        for len in [0, 1, 3] {
            XCTAssertEqual(assertWireError(try Hello.decode(raw([(1, bytes("b")), (3, token), (4, [UInt8](repeating: 1, count: len))])))?.isInvalid, true)
        }
    }

    func testDiscoveryInfo() throws {
        let info = try DiscoveryInfo(["room": "lab", "v": "2"])
        let h = Hello(displayName: "u", sessionToken: token, discoveryInfo: info)
        XCTAssertEqual(try Hello.decode(h.encode()).discoveryInfo, info)
        XCTAssertNil(try Hello.decode(Hello(displayName: "u", sessionToken: token).encode()).discoveryInfo)
        // Present but empty: an advertiser without application info.
        XCTAssertEqual(try Hello.decode(raw([(1, bytes("b")), (3, token), (5, [])])).discoveryInfo, DiscoveryInfo())
        // Truncated TXT, a reserved key, a key with a control character: the hello is invalid.
        for bad: [UInt8] in [[9] + bytes("room=la"), [6] + bytes("_id=xy"), [4, 0x61, 0x01, 0x3d, 0x62]] {
            XCTAssertEqual(assertWireError(try Hello.decode(raw([(1, bytes("b")), (3, token), (5, bad)])))?.isInvalid, true, "\(bad)")
        }
    }

    func testLongNameTruncatedOnACharacterBoundary() throws {
        // The encoder never cuts a character in half (40 × "é" = 80 bytes → 31 characters).
        let h = Hello(displayName: String(repeating: "é", count: 40), sessionToken: token)
        XCTAssertEqual(try Hello.decode(h.encode()).displayName, String(repeating: "é", count: 31))
    }

    func testKnownLayout() {
        let h = Hello(displayName: "A", maxFrame: 2048, sessionToken: token, minor: 0)
        XCTAssertEqual(h.encode(), [1, 0, 1, 0, 1, 0x41, 2, 0, 4, 0, 0, 8, 0, 3, 0, 16] + token)
    }

    func testDefaultsAndMissingMaxFrame() throws {
        let h = try Hello.decode(raw([(1, bytes("bob")), (3, token)]))
        XCTAssertEqual(h.maxFrame, UInt32(WireLimits.frame))
        XCTAssertEqual(h.displayName, "bob")
        XCTAssertEqual(h.sessionToken, token)
        XCTAssertEqual(h.major, 1)
    }

    func testFieldOrderDoesNotMatter() throws {
        let h = try Hello.decode(raw([(3, token), (2, be32(5000)), (1, bytes("x"))]))
        XCTAssertEqual(h, Hello(displayName: "x", maxFrame: 5000, sessionToken: token))
    }

    func testUnknownTLVSkipped() throws {
        let h = try Hello.decode(raw([(1, bytes("bob")), (9, [1, 2, 3]), (200, []), (3, token), (0, [7])]))
        XCTAssertEqual(h, Hello(displayName: "bob", sessionToken: token))
    }

    func testMinorVersionKept() throws {
        XCTAssertEqual(try Hello.decode(raw(minor: 9, [(1, bytes("b")), (3, token)])).minor, 9)
    }

    func testDuplicateTLVRejected() {
        for dup in [(UInt8(1), bytes("again")), (UInt8(3), token), (UInt8(2), be32(2000))] {
            let e = assertWireError(try Hello.decode(raw([(1, bytes("bob")), (2, be32(4096)), (3, token), dup])))
            XCTAssertEqual(e?.isInvalid, true)
            XCTAssertEqual(e?.description.contains("twice"), true, "\(String(describing: e))")
        }
        // As documented, a repeated unknown type is an error too.
        XCTAssertEqual(assertWireError(try Hello.decode(raw([(1, bytes("b")), (3, token), (9, []), (9, [])])))?.isInvalid, true)
    }

    func testWrongMajorRejected() {
        for major: UInt8 in [0, 2, 255] {
            let e = assertWireError(try Hello.decode(raw(major: major, [(1, bytes("bob")), (3, token)])))
            XCTAssertEqual(e?.isInvalid, true)
            XCTAssertEqual(e?.description.contains("major"), true)
        }
    }

    func testBadTokenLength() {
        for n in [0, 15, 17, 32] {
            let e = assertWireError(try Hello.decode(raw([(1, bytes("bob")), (3, [UInt8](repeating: 1, count: n))])))
            XCTAssertEqual(e, .invalid(field: "hello session token", reason: "length \(n), expected 16"))
        }
    }

    func testMaxFrameBounds() throws {
        XCTAssertEqual(try Hello.decode(raw([(1, bytes("b")), (2, be32(1024)), (3, token)])).maxFrame, 1024)
        XCTAssertEqual(try Hello.decode(raw([(1, bytes("b")), (2, be32(.max)), (3, token)])).maxFrame, .max)
        for m: UInt32 in [0, 1, 1023] {
            let e = assertWireError(try Hello.decode(raw([(1, bytes("b")), (2, be32(m)), (3, token)])))
            XCTAssertEqual(e?.isInvalid, true)
        }
        for len in [0, 3, 5, 8] {
            let e = assertWireError(try Hello.decode(raw([(1, bytes("b")), (2, [UInt8](repeating: 0x10, count: len)), (3, token)])))
            XCTAssertEqual(e, .invalid(field: "hello max frame", reason: "length \(len), expected 4"))
        }
    }

    func testDisplayNameRules() {
        for bad: [UInt8] in [[0xff], [0xc3, 0x28], [0xe2, 0x82], [0xed, 0xa0, 0x80]] {
            let e = assertWireError(try Hello.decode(raw([(1, bad), (3, token)])))
            XCTAssertEqual(e, .invalid(field: "hello display name", reason: "not valid UTF-8"))
        }
        XCTAssertEqual(assertWireError(try Hello.decode(raw([(1, []), (3, token)])))?.isInvalid, true)
        XCTAssertEqual(assertWireError(try Hello.decode(raw([(1, bytes("a\u{7}b")), (3, token)])))?.isInvalid, true)
        XCTAssertEqual(assertWireError(try Hello.decode(raw([(1, bytes("a\nb")), (3, token)])))?.isInvalid, true)
        let long = [UInt8](repeating: 0x61, count: 64)
        XCTAssertEqual(assertWireError(try Hello.decode(raw([(1, long), (3, token)])))?.isLimitExceeded, true)
    }

    func testMissingRequiredFields() {
        XCTAssertEqual(assertWireError(try Hello.decode(raw([(3, token)]))),
                       .invalid(field: "hello", reason: "no display name"))
        XCTAssertEqual(assertWireError(try Hello.decode(raw([(1, bytes("b"))]))),
                       .invalid(field: "hello", reason: "no session token"))
        XCTAssertEqual(assertWireError(try Hello.decode(raw([])))?.isInvalid, true)
    }

    func testEveryPrefixThrows() {
        let enc = Hello(displayName: "Bob", maxFrame: 9000, sessionToken: token).encode()
        for n in 0..<enc.count {
            assertWireError(try Hello.decode(Array(enc.prefix(n))), "prefix \(n)")
        }
        XCTAssertEqual(assertWireError(try Hello.decode([])), .truncated(field: "hello major version", needed: 1, available: 0))
    }

    func testTrailingPartialTLVIsTruncation() {
        let enc = Hello(displayName: "Bob", sessionToken: token).encode()
        XCTAssertEqual(assertWireError(try Hello.decode(enc + [9]))?.isTruncated, true)
        XCTAssertEqual(assertWireError(try Hello.decode(enc + [9, 0, 5, 1]))?.isTruncated, true)
    }
}
