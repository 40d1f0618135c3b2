/// Link-level pieces (PROTOCOL §6.3, minor 2): a frame larger than what one link carries in a
/// message is sent on that link as consecutive PIECE frames, `0x0B | last u8 | bytes`, each
/// encrypted on its own, and the receiving link joins them before decoding. The session cuts
/// its fragments for the largest frame any link takes; each link sizes what it sends for
/// itself, so a small-MTU link joining does not shrink the frames of a fast one.
package enum FramePieces {
    /// The PIECE frame type, beside `Frame.Kind`'s (it never reaches the session).
    package static let kind: UInt8 = 0x0B
    /// Bytes of a piece besides the frame's own: the type and the `last` flag.
    package static let overhead = 2
    /// The smallest piece payload a link uses, whatever its peer announced (hellos announce at
    /// least 1024, so this only guards against nonsense).
    package static let minimumPayload = 64

    /// `frame` as the plaintexts to send on a link whose messages carry at most `maxFrame`
    /// plaintext bytes: the frame itself when it fits, else pieces in order.
    package static func split(_ frame: [UInt8], maxFrame: Int) -> [[UInt8]] {
        guard frame.count > maxFrame else { return [frame] }
        let payload = max(1, maxFrame - overhead)
        var pieces: [[UInt8]] = []
        pieces.reserveCapacity((frame.count + payload - 1) / payload)
        var offset = 0
        while offset < frame.count {
            let end = min(offset + payload, frame.count)
            var piece: [UInt8] = []
            piece.reserveCapacity(overhead + end - offset)
            piece.append(kind)
            piece.append(end == frame.count ? 1 : 0)
            piece.append(contentsOf: frame[offset..<end])
            pieces.append(piece)
            offset = end
        }
        return pieces
    }
}

/// Joins the pieces arriving on one link (sans I/O). Feed it every decrypted plaintext in
/// order: it returns a whole frame's bytes when one is complete, nil while a frame is still
/// being joined. Pieces must be consecutive: another frame in the middle, an empty piece, or a
/// frame growing past `WireLimits.frame` is a protocol error.
package struct PieceJoiner: Sendable {
    private var buffer: [UInt8] = []
    private var joining = false

    package init() {}

    /// True while the first pieces of a frame have arrived and its last has not.
    package var isJoining: Bool { joining }

    package mutating func accept(_ plaintext: [UInt8]) throws -> [UInt8]? {
        guard plaintext.first == FramePieces.kind else {
            guard !joining else {
                throw WireError.invalid(field: "piece", reason: "a frame arrived while pieces of another were being joined")
            }
            return plaintext
        }
        guard plaintext.count > FramePieces.overhead else {
            throw WireError.truncated(field: "piece", needed: FramePieces.overhead + 1, available: plaintext.count)
        }
        let last = plaintext[1]
        guard last <= 1 else { throw WireError.invalid(field: "piece last flag", reason: "must be 0 or 1, got \(last)") }
        let size = buffer.count + plaintext.count - FramePieces.overhead
        guard size <= WireLimits.frame else {
            buffer = []; joining = false
            throw WireError.limitExceeded(field: "frame joined from pieces", value: size, limit: WireLimits.frame)
        }
        if !joining { buffer.reserveCapacity(last == 1 ? size : 16 * 1024 + 64) }
        buffer.append(contentsOf: plaintext[FramePieces.overhead...])
        guard last == 1 else { joining = true; return nil }
        joining = false
        defer { buffer = [] }
        return buffer
    }
}
