@preconcurrency import Crypto

/// SHA-256 of a file's bytes as they are read for sending, on a lane of its own: the sending
/// loop hands over each chunk it read (no second read of the file, no copy: arrays share
/// storage) and goes on writing while the chunk is hashed. Chunks are hashed in the order
/// they are handed over; `finish` waits for the last.
final class StreamingDigest: @unchecked Sendable {
    private let lane = BlockingPool.Lane("pl.file.hash")
    // Lane only:
    private var hasher = SHA256()
    private var count: UInt64 = 0

    /// Hashes `bytes` after every chunk handed over before.
    func update(_ bytes: [UInt8]) {
        Runtime.post(on: lane) { [self] in
            bytes.withUnsafeBytes { hasher.update(bufferPointer: $0) }
            count += UInt64(bytes.count)
            FileDigest.Hooks.afterChunk()
        }
    }

    /// The digest of every byte handed over, and how many there were.
    func finish() async throws -> (count: UInt64, digest: [UInt8]) {
        try await Runtime.offload(on: lane) { [self] in
            FileDigest.Hooks.counted()
            return (count, Array(hasher.finalize()))
        }
    }
}
