import Foundation
@preconcurrency import Crypto
#if canImport(Glibc)
import Glibc
#endif

/// Writes one incoming resource into its part file on a serial queue of its own, hashing the
/// bytes as they are written: a slow disk, a resumed multi-gigabyte prefix to hash again, or
/// the final check never run where they would stall the peer's keepalives, and verifying a
/// finished file costs nothing more. Every call returns at once; results come to completion
/// handlers, on the writer's queue, in the order the calls were made.
final class IncomingFileWriter: @unchecked Sendable {
    /// Why writing stopped; the part file keeps what was written, for a resume.
    enum Failure: Error, Sendable {
        case diskFull(held: UInt64)
        case failed(held: UInt64, FileFailure)
    }

    let partPath: String
    let size: UInt64
    /// Bytes the part file held when it was opened (a resume starts there).
    let resumedFrom: UInt64
    private let queue: BlockingPool.Lane
    // Queue only:
    private var fd: Int32
    private var hasher = SHA256()
    private var held: UInt64
    private var failure: Failure?

    /// Opens (creating) the part file. A part file longer than `size` is emptied first.
    init(partPath: String, size: UInt64) throws {
        let fd = open(partPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw PeerLinkError.file(FileFailure(path: partPath, .system(.write, errno: errno))) }
        var end = UInt64(max(0, lseek(fd, 0, SEEK_END)))
        if end > size {
            _ = ftruncate(fd, 0)
            _ = lseek(fd, 0, SEEK_SET)
            end = 0
        }
        self.fd = fd
        self.partPath = partPath
        self.size = size
        self.resumedFrom = end
        self.held = end
        self.queue = BlockingPool.Lane("pl.file.write")
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Hashes the bytes already held (a resume) before any new byte is written; `progress`
    /// gets (done, total) every few chunks.
    func hashHeldPrefix(progress: (@Sendable (UInt64, UInt64) -> Void)?) {
        guard resumedFrom > 0 else { return }
        Runtime.post(on: queue) { [self] in
            var buffer = [UInt8](repeating: 0, count: FileDigest.chunk)
            var done: UInt64 = 0
            var lastReport: UInt64 = 0
            while done < resumedFrom {
                let want = Int(min(UInt64(buffer.count), resumedFrom - done))
                let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(done)) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else {
                    failure = .failed(held: held, FileFailure(path: partPath, n < 0 ? .system(.readBack, errno: errno) : .changedSize(from: resumedFrom, to: done, during: .reading)))
                    return
                }
                buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                done += UInt64(n)
                FileDigest.Hooks.afterChunk()
                if done - lastReport >= 64 << 20 || done == resumedFrom { lastReport = done; progress?(done, resumedFrom) }
            }
        }
    }

    /// Appends `parts` in order, in one job with one answer: the bytes held afterwards, or why
    /// writing stopped. Every call gets an answer: after a failure (a write, reading a resumed
    /// prefix back, or `close`) the bytes are dropped and the failure is the answer, so that
    /// no caller waits for credit that never comes.
    func write(_ parts: [ArraySlice<UInt8>], completion: @escaping @Sendable (Result<UInt64, Failure>) -> Void) {
        Runtime.post(on: queue) { [self] in
            if let failure {
                completion(.failure(failure))
                return
            }
            for bytes in parts {
                var offset = 0
                while offset < bytes.count {
                    let n = bytes.withUnsafeBytes { raw in
                        pwrite(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset, off_t(held) + off_t(offset))
                    }
                    if n < 0 {
                        if errno == EINTR { continue }
                        let e = errno
                        // What reached the file stays; the hash covers only whole parts, and a
                        // resume reads the part file back anyway.
                        held += UInt64(offset)
                        let f: Failure = e == ENOSPC || e == EDQUOT
                            ? .diskFull(held: held)
                            : .failed(held: held, FileFailure(path: partPath, .system(.write, errno: e)))
                        failure = f
                        completion(.failure(f))
                        return
                    }
                    offset += n
                }
                bytes.withUnsafeBytes { hasher.update(bufferPointer: $0) }
                held += UInt64(bytes.count)
            }
            completion(.success(held))
        }
    }

    /// After every write: whether the file holds `size` bytes whose SHA-256 is `sha256`; if so
    /// it is moved to a unique name in `directory` and `completion` gets that path.
    func finish(sha256: [UInt8], directory: String, name: String,
                completion: @escaping @Sendable (Result<String, ResourceFailure>) -> Void) {
        Runtime.post(on: queue) { [self] in
            if let failure {
                if case let .failed(_, reason) = failure { completion(.failure(.file(reason))) } else {
                    completion(.failure(.file(FileFailure(path: partPath, .diskFull))))
                }
                return
            }
            guard held == size else {
                completion(.failure(.incomplete(received: held, size: size)))
                return
            }
            Glibc.close(fd)
            fd = -1
            guard Array(hasher.finalize()) == sha256 else {
                try? FileManager.default.removeItem(atPath: partPath)
                completion(.failure(.digestMismatch(name: name, direction: .receiving)))
                return
            }
            let dest = SafeFileName.unique(in: directory, name: name)
            do {
                try FileManager.default.moveItem(atPath: partPath, toPath: dest)
                completion(.success(dest))
            } catch {
                completion(.failure(.file(FileFailure(path: dest, .failed(.move, message: error.localizedDescription)))))
            }
        }
    }

    /// Closes the part file of a refused offer before any write; it is removed when it holds
    /// nothing (a part file from an earlier attempt stays for a later resume).
    func discard() {
        Runtime.post(on: queue) { [self] in
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
            failure = .failed(held: held, FileFailure(path: partPath, .closed))
            if held == 0 { try? FileManager.default.removeItem(atPath: partPath) }
        }
    }

    /// Closes the part file after the writes queued so far; it stays for a resume.
    func close() {
        Runtime.post(on: queue) { [self] in
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
            if failure == nil { failure = .failed(held: held, FileFailure(path: partPath, .closed)) }
        }
    }
}

extension IncomingFileWriter {
    /// Test hooks.
    enum Hooks {
        private static let lock = NSLock()
        nonisolated(unsafe) private static var hold: UInt64 = 0
        nonisolated(unsafe) private static var calls = 0
        /// Nanoseconds by which every other write's completion is held back (0: none), so
        /// completions reach the channel out of order. Tests only.
        static var holdEveryOtherCompletion: UInt64 {
            get { lock.withLock { hold } }
            set { lock.withLock { hold = newValue; calls = 0 } }
        }
        static func holdCompletion() -> UInt64 {
            lock.withLock {
                guard hold > 0 else { return 0 }
                calls += 1
                return calls % 2 == 1 ? hold : 0
            }
        }
    }
}
