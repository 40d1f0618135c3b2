/// Splits a byte stream into 2-byte big-endian length-prefixed messages (Noise on TCP and
/// RFCOMM). Feed it whatever `read()` returned; it yields whole messages and keeps the rest.
package struct LengthPrefixedDeframer: Sendable {
    /// The first byte of a length prefix cut by a read's end.
    private var header: UInt8?
    /// The length of the message being built in `partial`, while one is.
    private var expected: Int?
    private var partial: [UInt8] = []
    /// Messages completed by `append`, for `next()`.
    private var ready: [[UInt8]] = []
    private var readyHead = 0
    /// The zero length prefix met, once met.
    private var failure: WireError?

    package init() {}

    package static func frame(_ message: [UInt8]) throws -> [UInt8] {
        guard message.count <= WireLimits.noiseMessage else {
            throw WireError.limitExceeded(field: "Noise message size", value: message.count, limit: WireLimits.noiseMessage)
        }
        // One allocation of the final size, one copy of the message.
        return [UInt8](unsafeUninitializedCapacity: 2 + message.count) { out, count in
            out[0] = UInt8(message.count >> 8)
            out[1] = UInt8(message.count & 0xff)
            message.withUnsafeBufferPointer { src in
                if let base = src.baseAddress { (out.baseAddress! + 2).initialize(from: base, count: src.count) }
            }
            count = 2 + message.count
        }
    }

    /// Feeds bytes and keeps the messages they complete for `next()` (tests, fuzzing).
    package mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Feeds bytes straight from a read buffer and keeps the messages they complete for `next()`.
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        var done: [[UInt8]] = []
        try? take(bytes) { done.append($0) }  // a failure is kept for `next()`
        ready += done
    }

    /// The next complete message, or nil if more bytes are needed. A zero length is an error
    /// (no valid Noise message is empty on a PeerLink link), thrown once the messages before
    /// it were returned, and again on every later call.
    package mutating func next() throws -> [UInt8]? {
        if readyHead < ready.count {
            let m = ready[readyHead]
            readyHead += 1
            if readyHead == ready.count { ready.removeAll(keepingCapacity: true); readyHead = 0 }
            return m
        }
        if let failure { throw failure }
        return nil
    }

    /// Splits freshly read bytes into messages and hands each complete one to `emit`, in
    /// order. Every byte is copied once, from `bytes` into its message: a message wholly in
    /// this read is copied out directly, and one cut by the read's end is built in place
    /// until a later read completes it. Throws at a zero length prefix, after emitting the
    /// messages before it; the deframer then stays failed.
    package mutating func take(_ bytes: UnsafeRawBufferPointer, _ emit: ([UInt8]) -> Void) throws {
        if let failure { throw failure }
        guard let base = bytes.baseAddress else { return }
        var at = 0
        let count = bytes.count
        while at < count {
            if let expected {
                // Continue the message begun by an earlier read.
                let n = min(expected - partial.count, count - at)
                partial.append(contentsOf: UnsafeRawBufferPointer(start: base + at, count: n))
                at += n
                guard partial.count == expected else { return }
                emit(partial)
                partial = []
                self.expected = nil
                continue
            }
            // A length prefix, perhaps split across reads.
            let length: Int
            if header == nil, count - at >= 2 {
                length = Int(bytes[at]) << 8 | Int(bytes[at + 1])
                at += 2
            } else if let first = header {
                length = Int(first) << 8 | Int(bytes[at])
                header = nil
                at += 1
            } else {
                header = bytes[at]
                return
            }
            guard length > 0 else {
                let e = WireError.invalid(field: "length prefix", reason: "zero-length message")
                failure = e
                throw e
            }
            if count - at >= length {
                emit(Array(UnsafeRawBufferPointer(start: base + at, count: length)))
                at += length
            } else {
                expected = length
                partial.reserveCapacity(length)
            }
        }
    }

    /// Bytes received but not yet part of a complete message (nor waiting in `next()`).
    package var pendingBytes: Int { (header == nil ? 0 : 1) + (expected == nil ? 0 : 2 + partial.count) }
}
