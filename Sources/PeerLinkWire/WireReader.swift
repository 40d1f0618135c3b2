/// Reads big-endian fields from a byte array, throwing `WireError.truncated` instead of trapping.
package struct WireReader: Sendable {
    package let bytes: [UInt8]
    package private(set) var offset: Int

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
    }

    package var remaining: Int { bytes.count - offset }
    package var isAtEnd: Bool { offset >= bytes.count }

    private mutating func need(_ n: Int, _ field: String) throws {
        guard n >= 0, remaining >= n else {
            throw WireError.truncated(field: field, needed: n, available: remaining)
        }
    }

    package mutating func u8(_ field: String) throws -> UInt8 {
        try need(1, field)
        defer { offset += 1 }
        return bytes[offset]
    }

    package mutating func u16(_ field: String) throws -> UInt16 {
        try need(2, field)
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    package mutating func u32(_ field: String) throws -> UInt32 {
        try need(4, field)
        var v: UInt32 = 0
        for i in 0..<4 { v = v << 8 | UInt32(bytes[offset + i]) }
        offset += 4
        return v
    }

    package mutating func u64(_ field: String) throws -> UInt64 {
        try need(8, field)
        var v: UInt64 = 0
        for i in 0..<8 { v = v << 8 | UInt64(bytes[offset + i]) }
        offset += 8
        return v
    }

    package mutating func take(_ n: Int, _ field: String) throws -> [UInt8] {
        try need(n, field)
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    /// The unread bytes as a slice of the buffer being read: no copy (a frame's payload stays
    /// in the decrypted message it came in).
    package mutating func restSlice() -> ArraySlice<UInt8> {
        defer { offset = bytes.count }
        return bytes[offset...]
    }

    /// Everything that is left.
    package mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }

    /// A UTF-8 string preceded by a 16-bit length, at most `limit` bytes.
    package mutating func string16(_ field: String, limit: Int) throws -> String {
        let n = Int(try u16("\(field) length"))
        guard n <= limit else { throw WireError.limitExceeded(field: field, value: n, limit: limit) }
        let raw = try take(n, field)
        guard let s = String(validating: raw, as: UTF8.self) else {
            throw WireError.invalid(field: field, reason: "not valid UTF-8")
        }
        return s
    }

    package func expectEnd() throws {
        if remaining > 0 { throw WireError.trailingBytes(remaining) }
    }
}

extension String {
    /// The longest prefix of at most `maxBytes` UTF-8 bytes that ends on a character boundary.
    package func utf8Prefix(_ maxBytes: Int) -> String {
        if utf8.count <= maxBytes { return self }
        var out = ""
        var used = 0
        for ch in self {
            let n = ch.utf8.count
            if used + n > maxBytes { break }
            out.append(ch)
            used += n
        }
        return out
    }
}

/// Appends big-endian fields to a byte array.
package struct WireWriter: Sendable {
    package private(set) var bytes: [UInt8]

    package init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    package mutating func u8(_ v: UInt8) { bytes.append(v) }
    package mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xff)) }
    package mutating func u32(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((v >> UInt32(s)) & 0xff)) } }
    package mutating func u64(_ v: UInt64) { for s in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((v >> UInt64(s)) & 0xff)) } }
    package mutating func append<C: Collection>(_ c: C) where C.Element == UInt8 { bytes.append(contentsOf: c) }
    /// Writes a 16-bit length and the UTF-8 bytes; the caller has checked the length limit.
    package mutating func string16(_ s: String) {
        let utf8 = Array(s.utf8)
        u16(UInt16(clamping: utf8.count))
        bytes.append(contentsOf: utf8.prefix(Int(UInt16.max)))
    }
}
