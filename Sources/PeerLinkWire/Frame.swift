/// A session frame: the plaintext of one Noise transport message. See docs/PROTOCOL.md.
package enum Frame: Equatable, Sendable {
    /// Ask the remote node to join a session; `context` is opaque application data.
    case invite(id: UInt32, timeoutMillis: UInt32, context: [UInt8])
    /// Answer to `invite`.
    case inviteReply(id: UInt32, answer: InviteAnswer)
    /// A reliable, ordered record with an end-to-end sequence number (starting at 1).
    case reliable(seq: UInt64, record: Record)
    /// Cumulative acknowledgement: every reliable record with `seq <= upTo` has arrived.
    case ack(upTo: UInt64)
    /// An unreliable message: never retransmitted.
    case unreliable(payload: [UInt8])
    /// Keepalive probe and its answer (the token is echoed; RTT = now − sent).
    case ping(token: UInt64)
    case pong(token: UInt64)
    /// The sender leaves the session with this peer (on every link); the reason says why.
    case close(reason: CloseReason, text: String)
    /// A record of the bulk lane (stream and resource bytes and their close), with the bulk
    /// lane's own sequence number, so bulk data can use another link than messages.
    case bulk(seq: UInt64, record: Record)
    /// Cumulative acknowledgement of the bulk lane.
    case bulkAck(upTo: UInt64)

    package enum Kind: UInt8, Sendable {
        case invite = 0x01, inviteReply = 0x02, reliable = 0x03, ack = 0x04
        case unreliable = 0x05, ping = 0x06, pong = 0x07, close = 0x08
        case bulk = 0x09, bulkAck = 0x0A
    }

    package func encode() -> [UInt8] {
        // Header and payload go into one buffer of the right size: the payload is copied once.
        var w = WireWriter(capacity: 32 + payloadCount)
        switch self {
        case let .invite(id, timeout, context):
            // Callers check the limit (Node.invite); never write a length that disagrees with the bytes.
            let ctx = context.prefix(WireLimits.inviteContext)
            w.u8(Kind.invite.rawValue); w.u32(id); w.u32(timeout)
            w.u16(UInt16(ctx.count)); w.append(ctx)
        case let .inviteReply(id, answer):
            w.u8(Kind.inviteReply.rawValue); w.u32(id); w.u8(answer.rawValue)
        case let .reliable(seq, record):
            w.u8(Kind.reliable.rawValue); w.u64(seq); record.encode(into: &w)
        case let .ack(upTo):
            w.u8(Kind.ack.rawValue); w.u64(upTo)
        case let .unreliable(payload):
            w.u8(Kind.unreliable.rawValue); w.append(payload)
        case let .ping(token):
            w.u8(Kind.ping.rawValue); w.u64(token)
        case let .pong(token):
            w.u8(Kind.pong.rawValue); w.u64(token)
        case let .close(reason, text):
            w.u8(Kind.close.rawValue); w.u8(reason.rawValue); w.string16(text.utf8Prefix(WireLimits.reasonText))
        case let .bulk(seq, record):
            w.u8(Kind.bulk.rawValue); w.u64(seq); record.encode(into: &w)
        case let .bulkAck(upTo):
            w.u8(Kind.bulkAck.rawValue); w.u64(upTo)
        }
        return w.bytes
    }

    /// The encoding as a short head and the payload that ends it (`head + payload ==
    /// encode()`), for frames that end with an application payload (unreliable messages,
    /// message parts, stream data); nil for the others. An encrypting link reads the payload
    /// where it is instead of copying it into an encoded frame first.
    package func encodedParts() -> (head: [UInt8], payload: ArraySlice<UInt8>)? {
        var w = WireWriter(capacity: 16)
        let payload: ArraySlice<UInt8>
        switch self {
        case let .unreliable(bytes):
            w.u8(Kind.unreliable.rawValue)
            payload = bytes[...]
        case let .reliable(seq, record), let .bulk(seq, record):
            let kind: Kind = if case .reliable = self { .reliable } else { .bulk }
            switch record {
            case let .messagePart(final, bytes):
                w.u8(kind.rawValue); w.u64(seq); w.u8(Record.Kind.messagePart.rawValue); w.u8(final ? 1 : 0)
                payload = bytes
            case let .streamData(stream, bytes):
                w.u8(kind.rawValue); w.u64(seq); w.u8(Record.Kind.streamData.rawValue); w.u32(stream)
                payload = bytes
            default:
                return nil
            }
        default:
            return nil
        }
        return (w.bytes, payload)
    }

    /// Plaintext bytes `payloadLayout` needs to see: more than the longest head
    /// `encodedParts` writes.
    package static let payloadPeek = 16

    /// Where the application payload starts in a frame whose encoding begins with `prefix`,
    /// for the frames `encodedParts` splits (unreliable messages, message parts, stream data),
    /// and whether it is a message part that more parts will follow; nil for other frames and
    /// when `prefix` is too short to tell. Checks only what it reads: `decode(head:payload:)`
    /// checks the rest.
    package static func payloadLayout(_ prefix: [UInt8]) -> (offset: Int, unfinishedPart: Bool)? {
        guard let t = prefix.first, let kind = Kind(rawValue: t) else { return nil }
        switch kind {
        case .unreliable:
            return (1, false)
        case .reliable, .bulk:
            // type, 8-byte sequence number, record type, then the record's own head
            guard prefix.count >= 11, let record = Record.Kind(rawValue: prefix[9]) else { return nil }
            switch record {
            case .messagePart: return (11, prefix[10] == 0)
            case .streamData: return prefix.count >= 14 ? (14, false) : nil
            default: return nil
            }
        default:
            return nil
        }
    }

    /// The frame encoded as `head` followed by `payload`, split where `payloadLayout` said: the
    /// frame carries `payload` itself (no copy). Throws as `decode(_:)` does for the joined
    /// bytes, and when `head` is not exactly a frame's head up to its payload.
    package static func decode(head: [UInt8], payload: [UInt8]) throws -> Frame {
        guard head.count + payload.count <= WireLimits.frame else {
            throw WireError.limitExceeded(field: "frame size", value: head.count + payload.count, limit: WireLimits.frame)
        }
        guard payloadLayout(head)?.offset == head.count else {
            throw WireError.invalid(field: "frame head", reason: "does not end where the payload starts")
        }
        // The head alone is the same frame with an empty payload; only the payload differs.
        switch try decode(head) {
        case .unreliable:
            return .unreliable(payload: payload)
        case let .reliable(seq, record):
            return .reliable(seq: seq, record: record.carrying(payload))
        case let .bulk(seq, record):
            return .bulk(seq: seq, record: record.carrying(payload))
        default:
            throw WireError.invalid(field: "frame head", reason: "not a frame that ends with a payload")
        }
    }

    /// Bytes of the variable-length part a frame carries (payload, context), for sizing buffers.
    var payloadCount: Int {
        switch self {
        case let .invite(_, _, context): return context.count
        case let .unreliable(payload): return payload.count
        case let .reliable(_, record), let .bulk(_, record): return record.payloadCount
        case let .close(_, text): return text.utf8.count
        case .inviteReply, .ack, .ping, .pong, .bulkAck: return 0
        }
    }

    package static func decode(_ bytes: [UInt8]) throws -> Frame {
        guard bytes.count <= WireLimits.frame else {
            throw WireError.limitExceeded(field: "frame size", value: bytes.count, limit: WireLimits.frame)
        }
        var r = WireReader(bytes)
        let t = try r.u8("frame type")
        guard let kind = Kind(rawValue: t) else { throw WireError.unknownType(context: "frame", value: t) }
        let frame: Frame
        switch kind {
        case .invite:
            let id = try r.u32("invite id"), timeout = try r.u32("invite timeout")
            let n = Int(try r.u16("invite context length"))
            guard n <= WireLimits.inviteContext else {
                throw WireError.limitExceeded(field: "invitation context size", value: n, limit: WireLimits.inviteContext)
            }
            frame = .invite(id: id, timeoutMillis: timeout, context: try r.take(n, "invite context"))
        case .inviteReply:
            let id = try r.u32("invite id")
            let a = try r.u8("invite answer")
            guard let answer = InviteAnswer(rawValue: a) else {
                throw WireError.invalid(field: "invite answer", reason: "must be 0, 1 or 2, got \(a)")
            }
            frame = .inviteReply(id: id, answer: answer)
        case .reliable:
            let seq = try r.u64("sequence number")
            guard seq > 0 else { throw WireError.invalid(field: "sequence number", reason: "must start at 1") }
            frame = .reliable(seq: seq, record: try Record.decode(&r))
        case .ack:
            frame = .ack(upTo: try r.u64("ack"))
        case .unreliable:
            frame = .unreliable(payload: r.rest())
        case .ping:
            frame = .ping(token: try r.u64("ping token"))
        case .pong:
            frame = .pong(token: try r.u64("pong token"))
        case .close:
            let raw = try r.u8("close reason")
            frame = .close(reason: CloseReason(rawValue: raw) ?? .unspecified,
                           text: try r.string16("close text", limit: WireLimits.reasonText))
        case .bulk:
            let seq = try r.u64("bulk sequence number")
            guard seq > 0 else { throw WireError.invalid(field: "bulk sequence number", reason: "must start at 1") }
            let record = try Record.decode(&r)
            switch record {
            case .streamData, .streamClose, .resourceError, .resourceDigest: break
            default: throw WireError.invalid(field: "bulk record", reason: "only STREAM_DATA, STREAM_CLOSE, RESOURCE_ERROR and RESOURCE_DIGEST travel on the bulk lane")
            }
            frame = .bulk(seq: seq, record: record)
        case .bulkAck:
            frame = .bulkAck(upTo: try r.u64("bulk ack"))
        }
        try r.expectEnd()
        return frame
    }
}

/// The listener's answer to an invitation.
package enum InviteAnswer: UInt8, Sendable {
    case declined = 0, accepted = 1
    /// Both nodes invited each other at once and this listener's own invitation wins the
    /// tie-break (docs/PROTOCOL.md §10.1): the dialler will be invited instead.
    case crossed = 2
}

/// Why a link or session was closed.
package enum CloseReason: UInt8, Sendable {
    case unspecified = 0, leaving = 1, protocolError = 2, tooLarge = 3, declined = 4, duplicateLink = 5, timeout = 6
}

/// The content of a reliable frame.
package enum Record: Equatable, Sendable {
    /// A piece of an application message; `final` marks its last piece.
    case messagePart(final: Bool, bytes: ArraySlice<UInt8>)
    /// Opens a byte stream with an application-chosen name.
    case streamOpen(stream: UInt32, name: String)
    /// Bytes of a stream or resource; only sent within the receiver's credit.
    case streamData(stream: UInt32, bytes: ArraySlice<UInt8>)
    /// The receiver allows `bytes` more bytes on the stream.
    case streamCredit(stream: UInt32, bytes: UInt32)
    /// Ends a stream: finished normally, or cancelled by either side.
    case streamClose(stream: UInt32, status: StreamCloseStatus)
    /// Offers a resource (a named blob of known size and SHA-256).
    case resourceOffer(stream: UInt32, size: UInt64, sha256: [UInt8], name: String)
    /// Accepts an offer, asking for bytes from `offset` (resume), with initial credit.
    case resourceAccept(stream: UInt32, offset: UInt64, credit: UInt32)
    /// The receiver's verdict after the last byte: hash matched or not.
    case resourceResult(stream: UInt32, ok: Bool)
    /// The receiver cannot take (or go on taking) a resource, and says why; a STREAM_CLOSE
    /// (cancelled by the receiver) follows on the same lane. Protocol minor 1 and later.
    case resourceError(stream: UInt32, error: ResourceError)
    /// A step of negotiating a new link inside the session (e.g. a Wi-Fi Direct group).
    /// Protocol minor 1 and later.
    case linkSetup(LinkSetup)
    /// Offers a resource whose SHA-256 follows its last byte (RESOURCE_DIGEST). `key` is the
    /// sender's 32-byte name for this content, which the receiver keys a partial file by.
    /// Protocol minor 4 and later.
    case resourceOfferKeyed(stream: UInt32, size: UInt64, key: [UInt8], name: String)
    /// The SHA-256 of a keyed resource's whole content, after its last STREAM_DATA and before
    /// its STREAM_CLOSE, on the same lane. Protocol minor 4 and later.
    case resourceDigest(stream: UInt32, sha256: [UInt8])

    package enum Kind: UInt8, Sendable {
        case messagePart = 0x01, streamOpen = 0x02, streamData = 0x03, streamCredit = 0x04
        case streamClose = 0x05, resourceOffer = 0x06, resourceAccept = 0x07, resourceResult = 0x08
        case resourceError = 0x09, linkSetup = 0x0a, resourceOfferKeyed = 0x0b, resourceDigest = 0x0c
    }

    /// The same message part or stream data with `payload` as its bytes (other records as
    /// they are; `Frame.decode(head:payload:)` only calls this for those two).
    func carrying(_ payload: [UInt8]) -> Record {
        switch self {
        case let .messagePart(final, _): return .messagePart(final: final, bytes: payload[...])
        case let .streamData(stream, _): return .streamData(stream: stream, bytes: payload[...])
        default: return self
        }
    }

    /// Bytes of the variable-length part of the record (data, names), for sizing buffers.
    var payloadCount: Int {
        switch self {
        case let .messagePart(_, bytes), let .streamData(_, bytes): return bytes.count
        case let .streamOpen(_, name): return name.utf8.count
        case let .resourceOffer(_, _, _, name), let .resourceOfferKeyed(_, _, _, name): return 32 + name.utf8.count
        default: return 64
        }
    }

    func encode(into w: inout WireWriter) {
        switch self {
        case let .messagePart(final, bytes):
            w.u8(Kind.messagePart.rawValue); w.u8(final ? 1 : 0); w.append(bytes)
        case let .streamOpen(stream, name):
            w.u8(Kind.streamOpen.rawValue); w.u32(stream); w.string16(name)
        case let .streamData(stream, bytes):
            w.u8(Kind.streamData.rawValue); w.u32(stream); w.append(bytes)
        case let .streamCredit(stream, bytes):
            w.u8(Kind.streamCredit.rawValue); w.u32(stream); w.u32(bytes)
        case let .streamClose(stream, status):
            w.u8(Kind.streamClose.rawValue); w.u32(stream); w.u8(status.rawValue)
        case let .resourceOffer(stream, size, sha, name):
            w.u8(Kind.resourceOffer.rawValue); w.u32(stream); w.u64(size); w.append(sha); w.string16(name)
        case let .resourceAccept(stream, offset, credit):
            w.u8(Kind.resourceAccept.rawValue); w.u32(stream); w.u64(offset); w.u32(credit)
        case let .resourceResult(stream, ok):
            w.u8(Kind.resourceResult.rawValue); w.u32(stream); w.u8(ok ? 1 : 0)
        case let .resourceError(stream, error):
            w.u8(Kind.resourceError.rawValue); w.u32(stream)
            error.encode(into: &w)
        case let .linkSetup(setup):
            w.u8(Kind.linkSetup.rawValue)
            setup.encode(into: &w)
        case let .resourceOfferKeyed(stream, size, key, name):
            w.u8(Kind.resourceOfferKeyed.rawValue); w.u32(stream); w.u64(size); w.append(key); w.string16(name)
        case let .resourceDigest(stream, sha):
            w.u8(Kind.resourceDigest.rawValue); w.u32(stream); w.append(sha)
        }
    }

    static func decode(_ r: inout WireReader) throws -> Record {
        let t = try r.u8("record type")
        guard let kind = Kind(rawValue: t) else { throw WireError.unknownType(context: "record", value: t) }
        func bool(_ f: String) throws -> Bool {
            let b = try r.u8(f)
            guard b <= 1 else { throw WireError.invalid(field: f, reason: "must be 0 or 1, got \(b)") }
            return b == 1
        }
        switch kind {
        case .messagePart:
            return .messagePart(final: try bool("final flag"), bytes: r.restSlice())
        case .streamOpen:
            return .streamOpen(stream: try r.u32("stream id"), name: try r.string16("stream name", limit: WireLimits.name))
        case .streamData:
            return .streamData(stream: try r.u32("stream id"), bytes: r.restSlice())
        case .streamCredit:
            return .streamCredit(stream: try r.u32("stream id"), bytes: try r.u32("credit"))
        case .streamClose:
            let s = try r.u32("stream id")
            let raw = try r.u8("close status")
            guard let status = StreamCloseStatus(rawValue: raw) else { throw WireError.unknownType(context: "stream close status", value: raw) }
            return .streamClose(stream: s, status: status)
        case .resourceOffer:
            let s = try r.u32("stream id"), size = try r.u64("resource size")
            let sha = try r.take(32, "resource sha256")
            return .resourceOffer(stream: s, size: size, sha256: sha, name: try r.string16("resource name", limit: WireLimits.name))
        case .resourceAccept:
            return .resourceAccept(stream: try r.u32("stream id"), offset: try r.u64("resume offset"), credit: try r.u32("credit"))
        case .resourceResult:
            return .resourceResult(stream: try r.u32("stream id"), ok: try bool("result flag"))
        case .resourceError:
            return .resourceError(stream: try r.u32("stream id"), error: try ResourceError.decode(&r))
        case .linkSetup:
            return .linkSetup(try LinkSetup.decode(&r))
        case .resourceOfferKeyed:
            let s = try r.u32("stream id"), size = try r.u64("resource size")
            let key = try r.take(32, "resource content key")
            return .resourceOfferKeyed(stream: s, size: size, key: key, name: try r.string16("resource name", limit: WireLimits.name))
        case .resourceDigest:
            return .resourceDigest(stream: try r.u32("stream id"), sha256: try r.take(32, "resource sha256"))
        }
    }
}

/// How a stream ended.
package enum StreamCloseStatus: UInt8, Sendable {
    case finished = 0, cancelledBySender = 1, cancelledByReceiver = 2
}
