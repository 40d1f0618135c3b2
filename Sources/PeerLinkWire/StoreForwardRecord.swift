/// A record of the store-and-forward service (docs/PROTOCOL.md §16), carried on the service's
/// stream `peerlink/sf/1`, which each side of a session opens to the other. Each record is a
/// `u32` length and that many bytes: a type byte and its fields. The holder of a file item says
/// ITEM, of a message item MESSAGE (with the message's bytes); the recipient answers HAVE
/// (recorded: the holder may let it go), WANT (send the file as a resource named by the item's
/// ID) or REFUSE (with why).
package enum StoreForwardRecord: Equatable, Sendable {
    /// Item ids are 16 bytes, digests SHA-256.
    package static let idSize = 16, digestSize = 32
    /// Most bytes a record other than MESSAGE may hold (after its length).
    package static let maxLength = 1024
    /// Most bytes of a message item.
    package static let maxMessage = 65_536
    /// Most bytes any record may hold (a MESSAGE with the largest message).
    package static let maxFramedLength = 1 + idSize + 8 + maxMessage

    /// The holder has item `id` for the recipient: `size` bytes with SHA-256 `digest`, to be
    /// delivered before `expiresAt` (ms since 1970), named `name`.
    case item(id: [UInt8], size: UInt64, digest: [UInt8], expiresAt: UInt64, name: String)
    /// The recipient holds item `id` (recorded durably at `receivedAt`, ms since 1970): its receipt.
    case have(id: [UInt8], size: UInt64, digest: [UInt8], receivedAt: UInt64)
    /// The recipient wants item `id`: the holder offers it as a resource named by the id's hex.
    case want(id: [UInt8])
    /// The recipient will not take item `id` now.
    case refuse(id: [UInt8], reason: RefuseReason, text: String)
    /// The holder has message item `id` for the recipient, to be delivered before `expiresAt`
    /// (ms since 1970): its bytes (1 to `maxMessage`).
    case message(id: [UInt8], expiresAt: UInt64, bytes: [UInt8])

    /// Why a recipient refuses an item.
    package enum RefuseReason: UInt8, Sendable, CaseIterable {
        /// Its quota for the holder is used up; the holder tries again later.
        case quota = 1
        /// The item's time to live has passed; the holder gives it up.
        case expired = 2
        /// It does not fit on the recipient's disk; the holder tries again later.
        case noSpace = 3
        /// The recipient takes no items from this holder (not trusted); the holder tries again later.
        case notAccepted = 4
    }

    enum Kind: UInt8 { case item = 1, have = 2, want = 3, refuse = 4, message = 5 }

    /// The record's bytes without its length prefix.
    package func encoded() -> [UInt8] {
        var w = WireWriter()
        switch self {
        case let .item(id, size, digest, expiresAt, name):
            w.u8(Kind.item.rawValue); w.append(id); w.u64(size); w.append(digest); w.u64(expiresAt)
            w.string16(name.utf8Prefix(WireLimits.name))
        case let .have(id, size, digest, receivedAt):
            w.u8(Kind.have.rawValue); w.append(id); w.u64(size); w.append(digest); w.u64(receivedAt)
        case let .want(id):
            w.u8(Kind.want.rawValue); w.append(id)
        case let .refuse(id, reason, text):
            w.u8(Kind.refuse.rawValue); w.append(id); w.u8(reason.rawValue); w.string16(text.utf8Prefix(WireLimits.reasonText))
        case let .message(id, expiresAt, bytes):
            w.u8(Kind.message.rawValue); w.append(id); w.u64(expiresAt); w.append(bytes.prefix(Self.maxMessage))
        }
        return w.bytes
    }

    /// The record with its `u32` length prefix, as the stream carries it.
    package func framed() -> [UInt8] {
        let body = encoded()
        var w = WireWriter(capacity: body.count + 4)
        w.u32(UInt32(body.count)); w.append(body)
        return w.bytes
    }

    /// Decodes one record's bytes (without the length prefix); anything malformed throws.
    package static func decode(_ bytes: [UInt8]) throws -> StoreForwardRecord {
        guard bytes.count <= maxFramedLength else {
            throw WireError.limitExceeded(field: "store-and-forward record", value: bytes.count, limit: maxFramedLength)
        }
        var r = WireReader(bytes)
        let raw = try r.u8("store-and-forward record type")
        guard let kind = Kind(rawValue: raw) else { throw WireError.unknownType(context: "store-and-forward record", value: raw) }
        guard kind == .message || bytes.count <= maxLength else {
            throw WireError.limitExceeded(field: "store-and-forward record", value: bytes.count, limit: maxLength)
        }
        let id = try r.take(idSize, "item id")
        let record: StoreForwardRecord
        switch kind {
        case .item:
            let size = try r.u64("item size"), digest = try r.take(digestSize, "item digest"), expires = try r.u64("item expiry")
            let name = try r.string16("item name", limit: WireLimits.name)
            guard !name.isEmpty else { throw WireError.invalid(field: "item name", reason: "empty") }
            record = .item(id: id, size: size, digest: digest, expiresAt: expires, name: name)
        case .have:
            record = .have(id: id, size: try r.u64("receipt size"), digest: try r.take(digestSize, "receipt digest"),
                           receivedAt: try r.u64("receipt time"))
        case .want:
            record = .want(id: id)
        case .refuse:
            let code = try r.u8("refusal reason")
            guard let reason = RefuseReason(rawValue: code) else { throw WireError.unknownType(context: "item refusal reason", value: code) }
            record = .refuse(id: id, reason: reason, text: try r.string16("refusal text", limit: WireLimits.reasonText))
        case .message:
            let expires = try r.u64("message expiry")
            let body = r.rest()
            guard !body.isEmpty else { throw WireError.invalid(field: "message", reason: "empty") }
            record = .message(id: id, expiresAt: expires, bytes: body)
        }
        try r.expectEnd()
        return record
    }
}

/// Cuts a byte stream into store-and-forward records (their `u32` length prefixes), however
/// the bytes were split in transit: `append` what arrives, then take records with `next()`.
package struct StoreForwardDeframer: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    package init() {}

    package mutating func append(_ bytes: [UInt8]) {
        if start > 0, start == buffer.count { buffer.removeAll(keepingCapacity: true); start = 0 }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete record, nil when more bytes are needed. A length over the limit or a
    /// malformed record throws; the stream is then unusable.
    package mutating func next() throws -> StoreForwardRecord? {
        guard buffer.count - start >= 4 else { return nil }
        let n = buffer[start..<start + 4].reduce(0) { $0 << 8 | Int($1) }
        guard n <= StoreForwardRecord.maxFramedLength else {
            throw WireError.limitExceeded(field: "store-and-forward record", value: n, limit: StoreForwardRecord.maxFramedLength)
        }
        guard buffer.count - start - 4 >= n else { return nil }
        let body = Array(buffer[start + 4..<start + 4 + n])
        start += 4 + n
        if start > 4096 { buffer.removeFirst(start); start = 0 }
        return try StoreForwardRecord.decode(body)
    }
}
