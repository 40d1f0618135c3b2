import Foundation
import XCTest
import DocVectors

import PeerLinkWire

/// Keeps docs/PROTOCOL.md and the wire codecs in step: every ```hex <name>``` block of the
/// document (except the Noise and identity ones, checked in PeerLinkCoreTests) is decoded and
/// compared with the value the document describes, and that value is encoded back to exactly
/// the documented bytes.
final class ProtocolDocVectorsTests: XCTestCase {
    /// Blocks whose names start with these are checked by PeerLinkCoreTests.
    static let coreOwnedPrefixes = ["identity-", "noise-", "bt-"]

    static let tokenA: [UInt8] = (0..<16).map { 0xa0 + UInt8($0) }
    static let tokenB: [UInt8] = (0..<16).map { 0xb0 + UInt8($0) }
    static let helloA = Hello(displayName: "alice-laptop", maxFrame: 65519, sessionToken: tokenA, major: 1, minor: 0)
    static let helloB = Hello(displayName: "bob-pi", maxFrame: 65519, sessionToken: tokenB, major: 1, minor: 0)
    /// SHA-256 of the 11 bytes "hello world" (a well-known digest).
    static let helloWorldSHA256 = DocVectors.bytes(fromHex: "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9")!

    static let frames: [(String, Frame)] = [
        ("frame-invite", .invite(id: 0x1234_5678, timeoutMillis: 30000, context: Array("lab".utf8))),
        ("frame-invite-reply", .inviteReply(id: 0x1234_5678, answer: .accepted)),
        ("frame-reliable", .reliable(seq: 1, record: .messagePart(final: true, bytes: Array("hi".utf8)[...]))),
        ("frame-ack", .ack(upTo: 42)),
        ("frame-unreliable", .unreliable(payload: Array("pos=3,4".utf8))),
        ("frame-ping", .ping(token: 1_234_567)),
        ("frame-pong", .pong(token: 1_234_567)),
        ("frame-close", .close(reason: .leaving, text: "bye")),
        ("frame-bulk", .bulk(seq: 7, record: .streamData(stream: 3, bytes: Array("ab".utf8)[...]))),
        ("frame-bulk-ack", .bulkAck(upTo: 7)),
        ("record-message-part", .reliable(seq: 2, record: .messagePart(final: false, bytes: Array("hel".utf8)[...]))),
        ("record-stream-open", .reliable(seq: 3, record: .streamOpen(stream: 1, name: "camera"))),
        ("record-stream-data", .reliable(seq: 4, record: .streamData(stream: 1, bytes: [0xde, 0xad, 0xbe, 0xef]))),
        ("record-stream-credit", .reliable(seq: 5, record: .streamCredit(stream: 1, bytes: 262_144))),
        ("record-stream-close", .reliable(seq: 6, record: .streamClose(stream: 1, status: .finished))),
        ("record-resource-offer", .reliable(seq: 7, record: .resourceOffer(stream: 3, size: 11, sha256: helloWorldSHA256, name: "hello.txt"))),
        ("record-resource-accept", .reliable(seq: 8, record: .resourceAccept(stream: 3, offset: 5, credit: 262_144))),
        ("record-resource-result", .reliable(seq: 9, record: .resourceResult(stream: 3, ok: true))),
        ("record-resource-error", .reliable(seq: 10, record: .resourceError(stream: 3, error: .noSpace(needed: 32 << 20, available: 16 << 20)))),
        ("record-resource-error-margin", .reliable(seq: 11, record: .resourceError(stream: 3, error: .noSpace(needed: 32 << 20, available: 0, margin: 64 << 20)))),
        ("record-resource-offer-keyed", .reliable(seq: 12, record: .resourceOfferKeyed(stream: 3, size: 11, key: Array(0..<32), name: "hello.txt"))),
        ("record-resource-digest", .reliable(seq: 13, record: .resourceDigest(stream: 3, sha256: helloWorldSHA256))),
        ("record-link-setup", .reliable(seq: 11, record: .linkSetup(LinkSetup(id: 1, step: .propose, medium: "wifi-direct",
                                                                                parameters: [.init("roles", [3])], text: "sending 'f.bin'")))),
    ]

    static let checkedHere: Set<String> = Set(frames.map(\.0)).union([
        "hello", "hello-responder", "hello-unknown-field", "hello-discovery-info", "txt-rdata", "length-prefixed-noise-message-1", "pieces",
    ]).union(storeForward.map(\.0))

    static let storeForward: [(String, StoreForwardRecord)] = [
        ("sf-item", .item(id: Array(0..<16), size: 11, digest: helloWorldSHA256, expiresAt: 1_800_000_000_000, name: "hello.txt")),
        ("sf-have", .have(id: Array(0..<16), size: 11, digest: helloWorldSHA256, receivedAt: 1_795_000_000_000)),
        ("sf-want", .want(id: Array(0..<16))),
        ("sf-refuse", .refuse(id: Array(0..<16), reason: .quota, text: "quota")),
        ("sf-message", .message(id: Array(0..<16), expiresAt: 1_800_000_000_000, bytes: Array("level=1.2m".utf8))),
    ]

    var doc: DocVectors!

    override func setUpWithError() throws {
        doc = try DocVectors.load()
    }

    func testEveryWireVectorIsChecked() {
        let inDoc = Set(doc.names.filter { name in !Self.coreOwnedPrefixes.contains { name.hasPrefix($0) } })
        XCTAssertEqual(inDoc.subtracting(Self.checkedHere), [], "vectors in docs/PROTOCOL.md that no test checks")
        XCTAssertEqual(Self.checkedHere.subtracting(inDoc), [], "vectors this test expects but docs/PROTOCOL.md lacks")
        XCTAssertEqual(doc.duplicates, [], "vector names used more than once")
    }

    func testFramesAndRecords() throws {
        for (name, frame) in Self.frames {
            let bytes = try doc.hex(name)
            XCTAssertEqual(try Frame.decode(bytes), frame, name)
            XCTAssertEqual(frame.encode(), bytes, name)
        }
    }

    func testStoreForwardRecords() throws {
        for (name, record) in Self.storeForward {
            let bytes = try doc.hex(name)
            var d = StoreForwardDeframer()
            d.append(bytes)
            XCTAssertEqual(try d.next(), record, name)
            XCTAssertNil(try d.next(), name)
            XCTAssertEqual(record.framed(), bytes, name)
        }
    }

    func testPiecesVector() throws {
        let frame: [UInt8] = Frame.unreliable(payload: Array("hell".utf8)).encode()
        let pieces = FramePieces.split(frame, maxFrame: 4)
        XCTAssertEqual(pieces.flatMap { $0 }, try doc.hex("pieces"))
        var joiner = PieceJoiner()
        XCTAssertEqual(try pieces.compactMap { try joiner.accept($0) }, [frame])
    }

    func testFrameTypeBytesMatchTheDocumentedTables() throws {
        let frameTypes: [(String, UInt8)] = [
            ("frame-invite", 0x01), ("frame-invite-reply", 0x02), ("frame-reliable", 0x03), ("frame-ack", 0x04),
            ("frame-unreliable", 0x05), ("frame-ping", 0x06), ("frame-pong", 0x07), ("frame-close", 0x08),
            ("frame-bulk", 0x09), ("frame-bulk-ack", 0x0a), ("pieces", FramePieces.kind),
        ]
        for (name, type) in frameTypes { XCTAssertEqual(try doc.hex(name).first, type, name) }
        let recordTypes: [(String, UInt8)] = [
            ("record-message-part", 0x01), ("record-stream-open", 0x02), ("record-stream-data", 0x03),
            ("record-stream-credit", 0x04), ("record-stream-close", 0x05), ("record-resource-offer", 0x06),
            ("record-resource-accept", 0x07), ("record-resource-result", 0x08), ("record-resource-error", 0x09),
            ("record-link-setup", 0x0a), ("record-resource-offer-keyed", 0x0b), ("record-resource-digest", 0x0c),
        ]
        for (name, type) in recordTypes {
            let bytes = try doc.hex(name)
            XCTAssertEqual(bytes.first, 0x03, name)
            XCTAssertGreaterThan(bytes.count, 9, name)
            if bytes.count > 9 { XCTAssertEqual(bytes[9], type, "\(name): record type at frame offset 9") }
        }
    }

    func testHello() throws {
        for (name, hello) in [("hello", Self.helloA), ("hello-responder", Self.helloB)] {
            let bytes = try doc.hex(name)
            XCTAssertEqual(try Hello.decode(bytes), hello, name)
            XCTAssertEqual(hello.encode(), bytes, name)
        }
        // Unknown TLVs are skipped: the extended hello decodes to the plain one.
        let extended = try doc.hex("hello-unknown-field")
        XCTAssertEqual(try Hello.decode(extended), Self.helloA)
        XCTAssertEqual(Array(extended.prefix(Self.helloA.encode().count)), Self.helloA.encode())
        let withInfo = Hello(displayName: "bob", maxFrame: 65519, sessionToken: (0..<16).map { 0xb0 + UInt8($0) },
                             discoveryInfo: try DiscoveryInfo(["room": "lab"]), major: 1, minor: 0)
        XCTAssertEqual(withInfo.encode(), try doc.hex("hello-discovery-info"))
        XCTAssertEqual(try Hello.decode(try doc.hex("hello-discovery-info")), withInfo)
    }

    func testTXTRecord() throws {
        let rdata = try doc.hex("txt-rdata")
        let peer = try PeerID(parsing: "53oyqpnavfcrle64bi4ola73o4h2e7n3")
        let ad = try Advertisement(peerID: peer, displayName: "alice-laptop", protocolVersion: 1,
                                   info: DiscoveryInfo(["room": "lab", "v": "2"]))
        let expected = ["_id": "53oyqpnavfcrle64bi4ola73o4h2e7n3", "_dn": "alice-laptop", "_pv": "1", "room": "lab", "v": "2"]
        XCTAssertEqual(ad.txt, expected)
        XCTAssertEqual(try TXTRecord.encode(ad.txt), rdata)
        let decoded = try TXTRecord.decode(rdata)
        XCTAssertEqual(decoded, expected)
        XCTAssertEqual(try Advertisement(txt: decoded), ad)
    }

    func testLengthPrefixedMessage() throws {
        let message = try doc.hex("noise-message-1")
        let framed = try doc.hex("length-prefixed-noise-message-1")
        XCTAssertEqual(try LengthPrefixedDeframer.frame(message), framed)
        var deframer = LengthPrefixedDeframer()
        // Fed in two pieces, as a socket might deliver it.
        deframer.append(Array(framed.prefix(5)))
        XCTAssertNil(try deframer.next())
        deframer.append(Array(framed.dropFirst(5)))
        XCTAssertEqual(try deframer.next(), message)
        XCTAssertNil(try deframer.next())
        XCTAssertEqual(deframer.pendingBytes, 0)
    }

    func testPeerIDText() throws {
        // The base32 step of the worked example in section 3 (the hashing is checked in PeerLinkCoreTests).
        let bytes = try doc.hex("identity-peer-id-bytes")
        let text = try doc.text("identity-peer-id")
        XCTAssertEqual(try PeerID(bytes: bytes).description, text)
        XCTAssertEqual(try PeerID(parsing: text).bytes, bytes)
        XCTAssertEqual(try PeerID(parsing: text.uppercased()).bytes, bytes)
    }
}

