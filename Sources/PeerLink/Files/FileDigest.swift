import Foundation
@preconcurrency import Crypto
#if canImport(Glibc)
import Glibc
#endif

/// SHA-256 of files, read in chunks on a thread of their own, with progress. A file's digest is
/// computed once per content: it is remembered by device, inode, size and modification time,
/// so a transfer that reconnects and resumes does not hash a multi-gigabyte file again, and
/// callers that ask while the same file is being hashed (a send to several peers, a send that
/// `Session.prepareToSend` started early) wait for that one pass instead of starting another.
package enum FileDigest {
    /// Bytes read per step.
    static let chunk = 4 << 20

    /// Size and digest of the file at `path`; `progress(done, total)` is called every few
    /// chunks while hashing, also when this caller joined a pass already under way (not when
    /// the digest was known).
    package static func sha256(ofFileAt path: String, progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) async throws -> (size: UInt64, digest: [UInt8]) {
        let id = try FileIdentity(path: path)
        switch cache.join(id, progress: progress) {
        case let .known(digest):
            return (id.size, digest)
        case let .joined(job):
            return (id.size, try await job.value())
        case let .started(job):
            Runtime.detach("pl.digest") {
                let result = Result { try hash(path: path, size: id.size, progress: job.report) }
                cache.finish(id, job, result)
            }
            return (id.size, try await job.value())
        }
    }

    /// Hashes on the calling thread (a thread of its own). Fails if the file changed size.
    static func hash(path: String, size: UInt64, progress: (@Sendable (UInt64, UInt64) -> Void)?) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PeerLinkError.file(FileFailure(path: path, .system(.open, errno: errno))) }
        defer { close(fd) }
        var hasher = SHA256()
        var done: UInt64 = 0
        var buffer = [UInt8](repeating: 0, count: chunk)
        var lastReport: UInt64 = 0
        progress?(0, size)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw PeerLinkError.file(FileFailure(path: path, .system(.read, errno: errno)))
            }
            if n == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            done += UInt64(n)
            Hooks.afterChunk()
            if done - lastReport >= 64 << 20 { lastReport = done; progress?(done, size) }
        }
        guard done == size else { throw PeerLinkError.file(FileFailure(path: path, .changedSize(from: size, to: done, during: .reading))) }
        Hooks.counted()
        progress?(done, size)
        return Array(hasher.finalize())
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static let cache = DigestCache()

    /// Test hooks: a simulated slow disk, a pause, and a count of whole-file hashes.
    enum Hooks {
        private static let lock = NSLock()
        nonisolated(unsafe) private static var delay: UInt32 = 0
        nonisolated(unsafe) private static var count = 0
        /// Microseconds to sleep after each chunk read (0: none). Tests only.
        static var delayPerChunk: UInt32 {
            get { lock.withLock { delay } }
            set { lock.withLock { delay = newValue } }
        }
        nonisolated(unsafe) private static var held = false
        /// While true, hashing waits after each chunk, so that a test can look at what happens
        /// while a file is being hashed. Tests only.
        static var holdHashing: Bool {
            get { lock.withLock { held } }
            set { lock.withLock { held = newValue } }
        }
        /// Whole-file hashes computed so far (a pass of its own, or while sending).
        static var hashes: Int { lock.withLock { count } }
        static func afterChunk() {
            let d = delayPerChunk
            if d > 0 { usleep(d) }
            while holdHashing { usleep(1000) }
        }
        static func counted() { lock.withLock { count += 1 } }
    }
}

/// What identifies a file's content for the digest cache.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64
    let size: UInt64
    let modified: Int64

    init(path: String) throws {
        var st = stat()
        guard stat(path, &st) == 0 else { throw PeerLinkError.file(FileFailure(path: path, .system(.read, errno: errno))) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw PeerLinkError.file(FileFailure(path: path, .notRegularFile)) }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = UInt64(st.st_size)
        modified = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
    }
    /// The sender's 32-byte name for this content in a keyed offer (PROTOCOL §11.7): the
    /// SHA-256 of the file's device, inode, size and modification time. A file changed since
    /// an interrupted transfer gets a new key, so the receiver does not resume from the old
    /// bytes; a change that keeps all four is caught by the digest at the end.
    var contentKey: [UInt8] {
        var h = SHA256()
        h.update(data: Array("peerlink/content-key".utf8))
        for v in [device, inode, size, UInt64(bitPattern: modified)] { withUnsafeBytes(of: v.bigEndian) { h.update(bufferPointer: $0) } }
        return Array(h.finalize())
    }
}

/// Digests of files already hashed in this process, keyed by their identity (a changed file
/// has a new size or modification time and is hashed again), and the passes under way. Bounded.
final class DigestCache: @unchecked Sendable {
    private let lock = NSLock()
    private var digests: [FileIdentity: [UInt8]] = [:]
    private var order: [FileIdentity] = []
    private var running: [FileIdentity: HashJob] = [:]
    static let capacity = 256

    /// What a caller asking for a digest gets.
    enum Joined {
        /// Hashed before.
        case known([UInt8])
        /// Being hashed: wait for the job.
        case joined(HashJob)
        /// Not hashed yet: the caller runs the job, then `finish`es it.
        case started(HashJob)
    }

    /// The digest if known, else the pass to wait for (made if there is none); `progress`
    /// observes that pass.
    func join(_ id: FileIdentity, progress: (@Sendable (UInt64, UInt64) -> Void)?) -> Joined {
        let joined: Joined = lock.withLock {
            if let known = digests[id] { return .known(known) }
            if let job = running[id] { return .joined(job) }
            let job = HashJob()
            running[id] = job
            return .started(job)
        }
        switch joined {
        case let .joined(job), let .started(job): if let progress { job.observe(progress) }
        case .known: break
        }
        return joined
    }

    /// The digest if it is known (hashed before, by a pass or while sending), without hashing.
    func known(_ id: FileIdentity) -> [UInt8]? { lock.withLock { digests[id] } }

    /// Whether the digest is known or a pass is hashing the file now (a send then waits for it
    /// rather than reading the file a second time).
    func isKnownOrRunning(_ id: FileIdentity) -> Bool { lock.withLock { digests[id] != nil || running[id] != nil } }

    /// Remembers a digest computed elsewhere (while sending the whole file).
    func remember(_ digest: [UInt8], for id: FileIdentity) { lock.withLock { rememberLocked(digest, for: id) } }

    /// Ends a pass: a digest is remembered; every waiter gets the result.
    func finish(_ id: FileIdentity, _ job: HashJob, _ result: Result<[UInt8], Error>) {
        lock.withLock {
            if running[id] === job { running[id] = nil }
            if case let .success(digest) = result { rememberLocked(digest, for: id) }
        }
        job.complete(result)
    }

    private func rememberLocked(_ digest: [UInt8], for id: FileIdentity) {
        if digests.updateValue(digest, forKey: id) == nil { order.append(id) }
        if order.count > Self.capacity { digests[order.removeFirst()] = nil }
    }
}

/// One hashing pass that several callers may wait on, each with its own progress callback.
final class HashJob: @unchecked Sendable {
    private let lock = NSLock()
    private var observers: [@Sendable (UInt64, UInt64) -> Void] = []
    private var latest: (done: UInt64, total: UInt64)?
    private var result: Result<[UInt8], Error>?
    private var waiters: [CheckedContinuation<[UInt8], Error>] = []

    /// Adds a progress callback; one that joins late hears at once where the pass stands.
    func observe(_ progress: @escaping @Sendable (UInt64, UInt64) -> Void) {
        let now: (done: UInt64, total: UInt64)? = lock.withLock {
            observers.append(progress)
            return result == nil ? latest : nil
        }
        if let now { progress(now.done, now.total) }
    }

    /// Called by the hashing thread.
    @Sendable func report(_ done: UInt64, _ total: UInt64) {
        let all = lock.withLock {
            latest = (done, total)
            return observers
        }
        for o in all { o(done, total) }
    }

    func complete(_ r: Result<[UInt8], Error>) {
        let all = lock.withLock {
            result = r
            defer { waiters = [] }
            return waiters
        }
        for c in all { c.resume(with: r) }
    }

    /// The digest, once the pass ends.
    func value() async throws -> [UInt8] {
        try await withCheckedThrowingContinuation { c in
            let done: Result<[UInt8], Error>? = lock.withLock {
                if let result { return result }
                waiters.append(c)
                return nil
            }
            if let done { c.resume(with: done) }
        }
    }
}
