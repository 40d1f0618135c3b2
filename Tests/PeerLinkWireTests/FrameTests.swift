import XCTest
@testable import PeerLinkWire

final class FrameTests: XCTestCase {
    static let sha: [UInt8] = (0..<32).map { UInt8($0 * 7 & 0xff) }

    /// One or more samples of every frame and record case.
    static let samples: [Frame] = [
        .invite(id: 7, timeoutMillis: 30_000, context: [1, 2, 3]),
        .invite(id: 0, timeoutMillis: 0, context: []),
        .invite(id: .max, timeoutMillis: .max, context: [UInt8](repeating: 0xab, count: WireLimits.inviteContext)),
        .inviteReply(id: 7, answer: .accepted),
        .inviteReply(id: 8, answer: .declined),
        .reliable(seq: 1, record: .messagePart(final: true, bytes: bytes("hello")[...])),
        .reliable(seq: 2, record: .messagePart(final: false, bytes: [])),
        .reliable(seq: .max, record: .streamOpen(stream: 1, name: "chat")),
        .reliable(seq: 3, record: .streamOpen(stream: 2, name: "")),
        .reliable(seq: 4, record: .streamOpen(stream: 3, name: String(repeating: "n", count: WireLimits.name))),
        .reliable(seq: 5, record: .streamData(stream: 3, bytes: [0, 1, 2, 255])),
        .reliable(seq: 6, record: .streamData(stream: 3, bytes: [])),
        .reliable(seq: 7, record: .streamCredit(stream: 3, bytes: 262_144)),
        .reliable(seq: 8, record: .streamClose(stream: 3, status: .finished)),
        .reliable(seq: 9, record: .streamClose(stream: 3, status: .cancelledBySender)),
        .reliable(seq: 10, record: .streamClose(stream: 3, status: .cancelledByReceiver)),
        .reliable(seq: 11, record: .resourceOffer(stream: 5, size: 1 << 40, sha256: sha, name: "photo – ü.jpg")),
        .reliable(seq: 12, record: .resourceAccept(stream: 5, offset: 4096, credit: 65_536)),
        .reliable(seq: 13, record: .resourceResult(stream: 5, ok: true)),
        .reliable(seq: 14, record: .resourceResult(stream: 5, ok: false)),
        .reliable(seq: 15, record: .resourceError(stream: 5, error: .noSpace(needed: 1 << 40, available: 0))),
        .reliable(seq: 15, record: .resourceError(stream: 5, error: .noSpace(needed: 1 << 40, available: 0, margin: 64 << 20))),
        .reliable(seq: 15, record: .resourceError(stream: 5, error: .noSpace(needed: 1, available: 0, margin: 0))),
        .reliable(seq: 16, record: .resourceError(stream: 5, error: .diskFull(held: 123, size: 456))),
        .reliable(seq: 17, record: .resourceError(stream: 5, error: .writeFailed(held: 0, size: 9, reason: "Input/output error"))),
        .bulk(seq: 1, record: .resourceError(stream: 5, error: .diskFull(held: 1, size: 2))),
        .reliable(seq: 18, record: .resourceOfferKeyed(stream: 7, size: .max, key: sha, name: String(repeating: "k", count: WireLimits.name))),
        .reliable(seq: 19, record: .resourceOfferKeyed(stream: 7, size: 0, key: sha, name: "")),
        .bulk(seq: 2, record: .resourceDigest(stream: 7, sha256: sha)),
        .ack(upTo: 0),
        .ack(upTo: .max),
        .unreliable(payload: []),
        .unreliable(payload: [9, 8, 7]),
        .ping(token: 0x0102_0304_0506_0708),
        .pong(token: 42),
        .close(reason: .leaving, text: "bye"),
        .close(reason: .unspecified, text: ""),
        .close(reason: .protocolError, text: "bad frame"),
        .close(reason: .tooLarge, text: String(repeating: "x", count: WireLimits.reasonText)),
        .close(reason: .declined, text: "no"),
        .close(reason: .duplicateLink, text: "dup"),
        .close(reason: .timeout, text: "ⓣ"),
    ]

    /// Bytes before a trailing "rest of the frame" payload, or nil when the frame has none.
    static func restHeader(_ f: Frame) -> Int? {
        switch f {
        case .unreliable: return 1
        case .reliable(_, .messagePart): return 11
        case .reliable(_, .streamData): return 14
        default: return nil
        }
    }

    func testRoundTripEveryCase() throws {
        for f in Self.samples {
            let enc = f.encode()
            XCTAssertEqual(try Frame.decode(enc), f, "\(f)")
            XCTAssertEqual(try Frame.decode(enc).encode(), enc)
            if case .reliable(_, let r) = f {
                XCTAssertEqual(enc[0], Frame.Kind.reliable.rawValue)
                XCTAssertEqual(enc.count >= 10, true, "\(r)")
            }
        }
    }

    /// The split an encrypting link seals from is the encoding itself, cut where the payload
    /// starts; frames without a trailing payload have none.
    func testEncodedPartsAreTheEncodingCutBeforeThePayload() throws {
        let more: [Frame] = [.bulk(seq: 9, record: .streamData(stream: 4, bytes: [UInt8](repeating: 3, count: 16_000)[...])),
                             .bulk(seq: 1, record: .messagePart(final: true, bytes: [1]))]
        for f in Self.samples + more {
            let enc = f.encode()
            if let parts = f.encodedParts() {
                XCTAssertEqual(parts.head + parts.payload, enc, "\(f)")
                if case .bulk = f { continue }
                XCTAssertEqual(parts.head.count, Self.restHeader(f), "\(f)")
            } else {
                XCTAssertNil(Self.restHeader(f), "\(f) ends with a payload but has no parts")
            }
        }
    }

    /// Payloads are slices: of the buffer a message was cut from when sending, of the decrypted
    /// message when receiving. A slice from the middle of a buffer encodes as its bytes alone,
    /// and a decoded payload holds exactly the bytes after the header.
    func testPayloadSlicesEncodeAndDecodeAsTheirBytes() throws {
        let buffer = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        for range in [0..<16_384, 16_384..<32_768, 39_990..<40_000, 5..<5] {
            for frame in [Frame.reliable(seq: 3, record: .messagePart(final: range.upperBound == 40_000, bytes: buffer[range])),
                          Frame.bulk(seq: 4, record: .streamData(stream: 2, bytes: buffer[range]))] {
                let enc = frame.encode()
                let parts = try XCTUnwrap(frame.encodedParts())
                XCTAssertEqual(parts.head + parts.payload, enc)
                XCTAssertEqual(enc.count, parts.head.count + range.count)
                let back = try Frame.decode(enc)
                XCTAssertEqual(back, frame)
                switch back {
                case let .reliable(_, .messagePart(_, bytes)), let .bulk(_, .streamData(_, bytes)):
                    XCTAssertEqual(Array(bytes), Array(buffer[range]))
                    XCTAssertEqual(bytes.count, range.count)
                default:
                    XCTFail("decoded as \(back)")
                }
            }
        }
    }

    /// A link that decrypts a payload apart cuts the plaintext where `payloadLayout` says,
    /// from its first 16 bytes alone: that is where `encodedParts` cuts, and the two arrays
    /// decode to the frame the joined bytes make, carrying the payload array itself.
    func testPayloadLayoutCutsWhereEncodedPartsDoAndDecodesApart() throws {
        let big = [UInt8](repeating: 5, count: 65_000)
        let more: [Frame] = [.reliable(seq: 20, record: .messagePart(final: false, bytes: big[...])),
                             .bulk(seq: 21, record: .streamData(stream: 6, bytes: big[...])),
                             .unreliable(payload: big)]
        for f in Self.samples + more {
            let enc = f.encode()
            let layout = Frame.payloadLayout(Array(enc.prefix(Frame.payloadPeek)))
            XCTAssertEqual(layout?.offset, f.encodedParts()?.head.count, "\(f)")
            guard let layout else { continue }
            if case .reliable(_, .messagePart(false, _)) = f { XCTAssertTrue(layout.unfinishedPart, "\(f)") } else { XCTAssertFalse(layout.unfinishedPart, "\(f)") }
            let payload = Array(enc[layout.offset...])
            let apart = try Frame.decode(head: Array(enc[..<layout.offset]), payload: payload)
            XCTAssertEqual(apart, f)
            switch apart {
            case let .reliable(_, .messagePart(_, bytes)), let .bulk(_, .streamData(_, bytes)), let .reliable(_, .streamData(_, bytes)):
                XCTAssertEqual(bytes.startIndex, 0, "the slice is the whole payload array")
                XCTAssertEqual(bytes.count, payload.count)
            case .unreliable: break
            default: XCTFail("decoded apart as \(apart)")
            }
        }
        // Too short to tell, or frames without a trailing payload: keep the plaintext whole.
        XCTAssertNil(Frame.payloadLayout([]))
        XCTAssertNil(Frame.payloadLayout([Frame.Kind.reliable.rawValue, 0, 0, 0, 0, 0, 0, 0, 1, Record.Kind.messagePart.rawValue]))
        XCTAssertNil(Frame.payloadLayout([Frame.Kind.bulk.rawValue, 0, 0, 0, 0, 0, 0, 0, 1, Record.Kind.streamData.rawValue, 1, 0, 0]))
        XCTAssertNil(Frame.payloadLayout([FramePieces.kind, 1, 2, 3]))
        XCTAssertNil(Frame.payloadLayout([0xee] + [UInt8](repeating: 0, count: 20)))
    }

    /// A head that does not end where its payload starts, a record that may not carry bytes on
    /// its lane, or a frame over the size limit is refused apart as it is whole.
    func testDecodingApartRefusesWhatTheWholeFrameWould() throws {
        let part = Frame.reliable(seq: 1, record: .messagePart(final: true, bytes: [1, 2, 3][...])).encode()
        XCTAssertThrowsError(try Frame.decode(head: Array(part[..<10]), payload: Array(part[10...])))
        XCTAssertThrowsError(try Frame.decode(head: Array(part[..<12]), payload: Array(part[12...])))
        var zeroSeq = part
        zeroSeq[8] = 0
        XCTAssertThrowsError(try Frame.decode(head: Array(zeroSeq[..<11]), payload: Array(zeroSeq[11...])))
        XCTAssertThrowsError(try Frame.decode(zeroSeq))
        var badFinal = part
        badFinal[10] = 2
        XCTAssertThrowsError(try Frame.decode(head: Array(badFinal[..<11]), payload: Array(badFinal[11...])))
        let onBulk = Frame.bulk(seq: 1, record: .streamData(stream: 2, bytes: [7][...])).encode()
        var messageOnBulk = Array(onBulk[..<10]) + [0]  // bulk lane, MESSAGE_PART record
        messageOnBulk[9] = Record.Kind.messagePart.rawValue
        messageOnBulk[10] = 1
        XCTAssertThrowsError(try Frame.decode(messageOnBulk + [7]))
        XCTAssertThrowsError(try Frame.decode(head: messageOnBulk, payload: [7]))
        let head = Array(part[..<11])
        XCTAssertThrowsError(try Frame.decode(head: head, payload: [UInt8](repeating: 0, count: WireLimits.frame - 10))) { error in
            guard case WireError.limitExceeded = error else { return XCTFail("\(error)") }
        }
    }

    func testKnownEncodings() throws {
        XCTAssertEqual(Frame.ack(upTo: 0x0102).encode(), [0x04, 0, 0, 0, 0, 0, 0, 0x01, 0x02])
        XCTAssertEqual(Frame.inviteReply(id: 1, answer: .accepted).encode(), [0x02, 0, 0, 0, 1, 1])
        XCTAssertEqual(Frame.unreliable(payload: [0xaa]).encode(), [0x05, 0xaa])
        XCTAssertEqual(Frame.reliable(seq: 1, record: .messagePart(final: true, bytes: [0x41])).encode(),
                       [0x03, 0, 0, 0, 0, 0, 0, 0, 1, 0x01, 0x01, 0x41])
        XCTAssertEqual(Frame.close(reason: .leaving, text: "ok").encode(), [0x08, 0x01, 0x00, 0x02, 0x6f, 0x6b])
        XCTAssertEqual(Frame.invite(id: 2, timeoutMillis: 3, context: [9]).encode(),
                       [0x01, 0, 0, 0, 2, 0, 0, 0, 3, 0, 1, 9])
    }

    /// RESOURCE_DIGEST has exactly 32 bytes of digest: one more or one fewer does not decode.
    func testADigestOfAnyOtherLengthDoesNotDecode() {
        let good = Frame.bulk(seq: 1, record: .resourceDigest(stream: 3, sha256: Self.sha)).encode()
        XCTAssertNoThrow(try Frame.decode(good))
        XCTAssertThrowsError(try Frame.decode(good + [0]))
        XCTAssertThrowsError(try Frame.decode(Array(good.dropLast())))
    }

    func testEveryPrefixOfEveryFrameThrowsOrIsAShorterPayload() {
        for f in Self.samples {
            let enc = f.encode()
            for n in 0..<enc.count {
                let prefix = Array(enc.prefix(n))
                do {
                    let g = try Frame.decode(prefix)
                    // Only frames ending in "the rest of the bytes" may decode from a prefix,
                    // and only once their fixed header is complete.
                    guard let h = Self.restHeader(f), n >= h else {
                        XCTFail("prefix \(n)/\(enc.count) of \(f) decoded as \(g)")
                        continue
                    }
                    XCTAssertEqual(g.encode(), prefix)
                } catch let e as WireError {
                    XCTAssertFalse(e.description.isEmpty)
                    if let h = Self.restHeader(f) { XCTAssertLessThan(n, h, "\(f) prefix \(n): \(e)") }
                } catch {
                    XCTFail("non-wire error \(error)")
                }
            }
        }
    }

    func testEmptyInputIsTruncated() {
        let e = assertWireError(try Frame.decode([]))
        XCTAssertEqual(e?.isTruncated, true)
    }

    func testOversizedFrameRejected() throws {
        let max = [Frame.Kind.unreliable.rawValue] + [UInt8](repeating: 1, count: WireLimits.frame - 1)
        XCTAssertEqual(try Frame.decode(max), .unreliable(payload: Array(max.dropFirst())))
        let over = max + [1]
        let e = assertWireError(try Frame.decode(over))
        XCTAssertEqual(e, .limitExceeded(field: "frame size", value: WireLimits.frame + 1, limit: WireLimits.frame))
        XCTAssertEqual(WireLimits.frame, 65519)
    }

    func testInviteContextLimit() {
        var w = WireWriter()
        w.u8(Frame.Kind.invite.rawValue); w.u32(1); w.u32(1000)
        w.u16(UInt16(WireLimits.inviteContext + 1)); w.append([UInt8](repeating: 0, count: WireLimits.inviteContext + 1))
        let e = assertWireError(try Frame.decode(w.bytes))
        XCTAssertEqual(e?.isLimitExceeded, true)
        // The limit is checked before the bytes are needed: a huge claimed length alone fails the same way.
        var w2 = WireWriter()
        w2.u8(Frame.Kind.invite.rawValue); w2.u32(1); w2.u32(1000); w2.u16(0xffff)
        XCTAssertEqual(assertWireError(try Frame.decode(w2.bytes))?.isLimitExceeded, true)
    }

    func testNamesLongerThan255Rejected() {
        let long = String(repeating: "a", count: WireLimits.name + 1)
        let open = Frame.reliable(seq: 1, record: .streamOpen(stream: 1, name: long)).encode()
        XCTAssertEqual(assertWireError(try Frame.decode(open))?.isLimitExceeded, true)
        let offer = Frame.reliable(seq: 1, record: .resourceOffer(stream: 1, size: 1, sha256: Self.sha, name: long)).encode()
        XCTAssertEqual(assertWireError(try Frame.decode(offer))?.isLimitExceeded, true)
        // A close text above the limit on the wire is rejected too.
        var w = WireWriter()
        w.u8(Frame.Kind.close.rawValue); w.u8(1); w.string16(String(repeating: "c", count: 256))
        XCTAssertEqual(assertWireError(try Frame.decode(w.bytes))?.isLimitExceeded, true)
    }

    func testCloseTextIsTruncatedOnEncode() throws {
        let f = Frame.close(reason: .leaving, text: String(repeating: "z", count: 300))
        XCTAssertEqual(try Frame.decode(f.encode()), .close(reason: .leaving, text: String(repeating: "z", count: 255)))
    }

    func testCloseTextTruncatedOnACharacterBoundary() throws {
        // 200 × "é" is 400 bytes: the text is cut to whole characters within 255 bytes.
        let f = Frame.close(reason: .leaving, text: String(repeating: "é", count: 200))
        XCTAssertEqual(try Frame.decode(f.encode()), .close(reason: .leaving, text: String(repeating: "é", count: 127)))
        let g = Frame.close(reason: .leaving, text: String(repeating: "a", count: 254) + "👍")
        XCTAssertEqual(try Frame.decode(g.encode()), .close(reason: .leaving, text: String(repeating: "a", count: 254)))
    }

    func testOversizedInviteContextNeverProducesAMalformedFrame() throws {
        let f = Frame.invite(id: 1, timeoutMillis: 1, context: [UInt8](repeating: 1, count: 70_000))
        guard case let .invite(_, _, ctx) = try Frame.decode(f.encode()) else { return XCTFail() }
        XCTAssertLessThanOrEqual(ctx.count, WireLimits.inviteContext)
    }

    func testInvalidUTF8NameRejected() {
        var w = WireWriter()
        w.u8(Frame.Kind.reliable.rawValue); w.u64(1); w.u8(Record.Kind.streamOpen.rawValue); w.u32(1)
        w.u16(2); w.append([0xc3, 0x28])
        let e = assertWireError(try Frame.decode(w.bytes))
        XCTAssertEqual(e?.isInvalid, true)
    }

    func testUnknownFrameTypes() {
        for t: UInt8 in [0x00, 0x0b, 0x7f, 0xff] {
            let e = assertWireError(try Frame.decode([t, 0, 0, 0, 0, 0, 0, 0, 0]))
            XCTAssertEqual(e, .unknownType(context: "frame", value: t))
        }
    }

    func testUnknownRecordTypes() {
        for t: UInt8 in [0x00, 0x0d, 0xff] {
            var w = WireWriter()
            w.u8(Frame.Kind.reliable.rawValue); w.u64(1); w.u8(t); w.append([0, 0, 0, 0, 0])
            XCTAssertEqual(assertWireError(try Frame.decode(w.bytes)), .unknownType(context: "record", value: t))
        }
    }

    func testUnknownStreamCloseStatus() {
        var w = WireWriter()
        w.u8(Frame.Kind.reliable.rawValue); w.u64(1); w.u8(Record.Kind.streamClose.rawValue); w.u32(1); w.u8(3)
        XCTAssertEqual(assertWireError(try Frame.decode(w.bytes))?.isUnknownType, true)
    }

    func testUnknownCloseReasonDecodesAsUnspecified() throws {
        var w = WireWriter()
        w.u8(Frame.Kind.close.rawValue); w.u8(200); w.string16("why")
        XCTAssertEqual(try Frame.decode(w.bytes), .close(reason: .unspecified, text: "why"))
    }

    func testBadBoolBytes() {
        // inviteReply answer
        XCTAssertEqual(try Frame.decode([0x02, 0, 0, 0, 1, 2]), .inviteReply(id: 1, answer: .crossed))
        XCTAssertEqual(assertWireError(try Frame.decode([0x02, 0, 0, 0, 1, 3]))?.isInvalid, true)
        XCTAssertEqual(assertWireError(try Frame.decode([0x02, 0, 0, 0, 1, 0xff]))?.isInvalid, true)
        // messagePart final flag
        var w = WireWriter()
        w.u8(0x03); w.u64(1); w.u8(Record.Kind.messagePart.rawValue); w.u8(2); w.append([1, 2])
        XCTAssertEqual(assertWireError(try Frame.decode(w.bytes))?.isInvalid, true)
        // resourceResult flag
        var w2 = WireWriter()
        w2.u8(0x03); w2.u64(1); w2.u8(Record.Kind.resourceResult.rawValue); w2.u32(1); w2.u8(2)
        XCTAssertEqual(assertWireError(try Frame.decode(w2.bytes))?.isInvalid, true)
    }

    func testResourceErrorCodesAndTextAreChecked() {
        func record(code: UInt8, text: [UInt8] = []) -> [UInt8] {
            var w = WireWriter()
            w.u8(0x03); w.u64(1); w.u8(Record.Kind.resourceError.rawValue); w.u32(1)
            w.u8(code); w.u64(1); w.u64(2); w.u16(UInt16(text.count)); w.append(text)
            return w.bytes
        }
        XCTAssertEqual(try Frame.decode(record(code: 2)), .reliable(seq: 1, record: .resourceError(stream: 1, error: .diskFull(held: 1, size: 2))))
        for bad: UInt8 in [0, 5, 0xff] {
            XCTAssertNotNil(assertWireError(try Frame.decode(record(code: bad))), "code \(bad)")
        }
        XCTAssertNotNil(assertWireError(try Frame.decode(record(code: 3, text: [0xff, 0xfe]))), "text must be UTF-8")
        XCTAssertNotNil(assertWireError(try Frame.decode(record(code: 2, text: Array("x".utf8)))), "only code 3 carries text (found by FrameFuzz)")
        XCTAssertNotNil(assertWireError(try Frame.decode(record(code: 3, text: Array(repeating: 0x61, count: WireLimits.reasonText + 1)))),
                        "text is bounded")
        XCTAssertNotNil(assertWireError(try Frame.decode(Array(record(code: 1).dropLast(3)))), "truncated")
        // Code 4 (minor 3) carries the receiver's margin after the empty text; nothing else does.
        XCTAssertEqual(try Frame.decode(record(code: 4) + [0, 0, 0, 0, 4, 0, 0, 0]),
                       .reliable(seq: 1, record: .resourceError(stream: 1, error: .noSpace(needed: 1, available: 2, margin: 64 << 20))))
        XCTAssertNotNil(assertWireError(try Frame.decode(record(code: 4))), "code 4 without its margin")
        XCTAssertNotNil(assertWireError(try Frame.decode(record(code: 4, text: Array("x".utf8)) + [0, 0, 0, 0, 0, 0, 0, 0])), "code 4 carries no text")
        XCTAssertNotNil(assertWireError(try Frame.decode(record(code: 1) + [0, 0, 0, 0, 4, 0, 0, 0])), "code 1 carries no margin")
    }

    /// The sender shows the receiver's words: the margin kept free, when the receiver said it.
    func testNoSpaceSaysTheMarginAndOlderPeersGetCodeOne() {
        let withMargin = ResourceError.noSpace(needed: 32 << 20, available: 0, margin: 64 << 20)
        XCTAssertEqual("\(withMargin)", "not enough space on the receiver: 32.0 MiB offered, 0 B free (keeping 64.0 MiB free: --keep-free)")
        XCTAssertEqual("\(ResourceError.noSpace(needed: 32 << 20, available: 16 << 20))", "not enough space on the receiver: 32.0 MiB offered, 16.0 MiB free")
        XCTAssertEqual("\(ResourceError.noSpace(needed: 1024, available: 0, margin: 0))", "not enough space on the receiver: 1.0 KiB offered, 0 B free")
        XCTAssertEqual(withMargin.readable(byMinor: 2), .noSpace(needed: 32 << 20, available: 0), "a minor-2 peer cannot read code 4")
        XCTAssertEqual(withMargin.readable(byMinor: 3), withMargin)
        XCTAssertEqual(ResourceError.diskFull(held: 1, size: 2).readable(byMinor: 1), .diskFull(held: 1, size: 2))
        let old = Frame.reliable(seq: 1, record: .resourceError(stream: 1, error: withMargin.readable(byMinor: 2))).encode()
        XCTAssertEqual(old[14], 1, "code 01 for a minor-2 peer")
    }

    func testSequenceZeroRejected() {
        var enc = Frame.reliable(seq: 1, record: .messagePart(final: true, bytes: [1])).encode()
        enc[8] = 0
        let e = assertWireError(try Frame.decode(enc))
        XCTAssertEqual(e, .invalid(field: "sequence number", reason: "must start at 1"))
    }

    func testTrailingBytesRejected() {
        for f in Self.samples where Self.restHeader(f) == nil {
            let e = assertWireError(try Frame.decode(f.encode() + [0]), "\(f)")
            XCTAssertEqual(e, .trailingBytes(1), "\(f)")
            XCTAssertEqual(assertWireError(try Frame.decode(f.encode() + [1, 2, 3])), .trailingBytes(3))
        }
    }

    func testRestPayloadsTakeTrailingBytes() throws {
        XCTAssertEqual(try Frame.decode([0x05, 1, 2, 3]), .unreliable(payload: [1, 2, 3]))
        let enc = Frame.reliable(seq: 1, record: .streamData(stream: 9, bytes: [1])).encode() + [2]
        XCTAssertEqual(try Frame.decode(enc), .reliable(seq: 1, record: .streamData(stream: 9, bytes: [1, 2])))
    }

    func testResourceOfferNeedsFullHash() {
        var w = WireWriter()
        w.u8(0x03); w.u64(1); w.u8(Record.Kind.resourceOffer.rawValue); w.u32(1); w.u64(10)
        w.append([UInt8](repeating: 1, count: 31))
        XCTAssertEqual(assertWireError(try Frame.decode(w.bytes))?.isTruncated, true)
    }

    func testWireReaderNeverReadsPastEnd() throws {
        var r = WireReader([1, 2, 3])
        XCTAssertEqual(try r.u16("a"), 0x0102)
        XCTAssertEqual(assertWireError(try r.u16("b")), .truncated(field: "b", needed: 2, available: 1))
        XCTAssertEqual(assertWireError(try r.take(-1, "neg"))?.isTruncated, true)
        XCTAssertEqual(try r.u8("c"), 3)
        XCTAssertTrue(r.isAtEnd)
        XCTAssertEqual(r.rest(), [])
        XCTAssertEqual(assertWireError(try r.u64("d"))?.isTruncated, true)
        var w = WireWriter()
        w.u64(0x0102_0304_0506_0708); w.u32(0x0a0b_0c0d)
        var r2 = WireReader(w.bytes)
        XCTAssertEqual(try r2.u64("x"), 0x0102_0304_0506_0708)
        XCTAssertEqual(try r2.u32("y"), 0x0a0b_0c0d)
        try r2.expectEnd()
    }
}
