import Foundation
@preconcurrency import Crypto

/// SHA-256 of a file's bytes as they are read for sending, on a lane of its own: the sending
/// loop hands over each chunk it read (no second read of the file, no copy: arrays share
/// storage) and goes on writing while the chunk is hashed. Chunks are hashed in the order
/// they are handed over; `finish` waits for the last. A hasher slower than the link holds at
/// most `maxBehind` bytes: `catchUp` waits until it is within it, before the next read.
final class StreamingDigest: @unchecked Sendable {
    /// Bytes handed over and not hashed yet past which the sender waits before reading more.
    static let maxBehind = 8 << 20

    private let lane = BlockingPool.Lane("pl.file.hash")
    private let lock = NSLock()
    private var behind = 0  // under `lock`
    // Lane only:
    private var hasher = SHA256()
    private var count: UInt64 = 0

    /// Hashes `bytes` after every chunk handed over before.
    func update(_ bytes: [UInt8]) {
        lock.withLock { behind += bytes.count }
        Runtime.post(on: lane) { [self] in
            bytes.withUnsafeBytes { hasher.update(bufferPointer: $0) }
            count += UInt64(bytes.count)
            lock.withLock { behind -= bytes.count }
            FileDigest.Hooks.afterChunk()
        }
    }

    /// Whether the hasher holds more than `maxBehind` bytes not hashed yet.
    var isBehind: Bool { lock.withLock { behind > Self.maxBehind } }

    /// Returns once every chunk handed over so far is hashed.
    func catchUp() async throws {
        try await Runtime.offload(on: lane) {}
    }

    /// The digest of every byte handed over, and how many there were.
    func finish() async throws -> (count: UInt64, digest: [UInt8]) {
        try await Runtime.offload(on: lane) { [self] in
            FileDigest.Hooks.counted()
            return (count, Array(hasher.finalize()))
        }
    }
}
