import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Reads a file being sent, on a serial queue of its own (never the cooperative pool or the
/// peer's actor).
final class OutgoingFileReader: @unchecked Sendable {
    let path: String
    private let fd: Int32
    private let queue = BlockingPool.Lane("pl.file.read")

    init(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PeerLinkError.file(FileFailure(path: path, .system(.open, errno: errno))) }
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// Up to `count` bytes from `offset`; fewer only at the end of the file.
    func read(at offset: UInt64, count: Int) async throws -> [UInt8] {
        let fd = self.fd, path = self.path
        return try await Runtime.offload(on: queue) {
            // Not zeroed first: `pread` fills what is kept, and the rest is cut off.
            var failure: Int32 = 0
            let out = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                var got = 0
                while got < count {
                    let n = pread(fd, buffer.baseAddress.map { $0 + got }, count - got, off_t(offset) + off_t(got))
                    if n < 0 {
                        if errno == EINTR { continue }
                        failure = errno
                        break
                    }
                    if n == 0 { break }
                    got += n
                }
                initialized = got
            }
            if failure != 0 { throw PeerLinkError.file(FileFailure(path: path, .system(.read, errno: failure))) }
            return out
        }
    }
}
