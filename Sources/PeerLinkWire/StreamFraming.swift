/// Splits a byte stream into 2-byte big-endian length-prefixed messages (Noise on TCP and
/// RFCOMM). Feed it whatever `read()` returned; it yields whole messages and keeps the rest.
public struct LengthPrefixedDeframer: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    public static func frame(_ message: [UInt8]) throws -> [UInt8] {
        guard message.count <= WireLimits.noiseMessage else {
            throw WireError.limitExceeded(field: "Noise message size", value: message.count, limit: WireLimits.noiseMessage)
        }
        var out = [UInt8(message.count >> 8), UInt8(message.count & 0xff)]
        out.append(contentsOf: message)
        return out
    }

    public mutating func append(_ bytes: [UInt8]) { buffer.append(contentsOf: bytes) }

    /// Appends bytes straight from a read buffer (no intermediate array).
    public mutating func append(_ bytes: UnsafeRawBufferPointer) { buffer.append(contentsOf: bytes) }

    /// The next complete message, or nil if more bytes are needed. A zero length is an error
    /// (no valid Noise message is empty on a PeerLink link).
    public mutating func next() throws -> [UInt8]? {
        guard buffer.count - start >= 2 else { compact(); return nil }
        let n = Int(buffer[start]) << 8 | Int(buffer[start + 1])
        guard n > 0 else { throw WireError.invalid(field: "length prefix", reason: "zero-length message") }
        guard buffer.count - start >= 2 + n else { compact(); return nil }
        let msg = Array(buffer[(start + 2)..<(start + 2 + n)])
        start += 2 + n
        return msg
    }

    /// Bytes received but not yet part of a complete message.
    public var pendingBytes: Int { buffer.count - start }

    private mutating func compact() {
        if start > 0 { buffer.removeFirst(start); start = 0 }
    }
}
