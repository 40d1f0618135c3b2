import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A Unix stream socket's address and the few calls the API's server and clients make.
public enum UnixSocket {
    /// A failed socket call, with the path and the system's reason.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
        /// errno of the failed call (0 when the failure is not a system call's).
        public let code: Int32
    }

    static func failure(_ what: String, _ code: Int32 = errno) -> Failure {
        Failure(description: "\(what): \(String(cString: strerror(code)))", code: code)
    }

    /// Runs `body` with `path` as a `sockaddr_un`.
    static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) throws(Failure) -> T {
        var addr = sockaddr_un()
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw Failure(description: "socket path too long (at most \(MemoryLayout.size(ofValue: addr.sun_path) - 1) bytes): \(path)", code: ENAMETOOLONG)
        }
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in bytes.enumerated() { p[i] = b }
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// A connected client socket (close it), or the failure (`code` ENOENT or ECONNREFUSED
    /// when nothing listens there).
    public static func connect(_ path: String) throws(Failure) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket(AF_UNIX)") }
        let rc = try withAddress(path) { Glibc.connect(fd, $0, $1) }
        guard rc == 0 else {
            let e = errno
            close(fd)
            throw failure("cannot connect to \(path)", e)
        }
        return fd
    }

    /// Sets the receive and send timeouts of `fd`.
    static func setTimeouts(_ fd: Int32, receive: Duration, send: Duration) {
        for (opt, d) in [(SO_RCVTIMEO, receive), (SO_SNDTIMEO, send)] {
            let (s, atto) = d.components
            var tv = timeval(tv_sec: Int(max(0, s)), tv_usec: Int(atto / 1_000_000_000_000))
            if tv.tv_sec == 0, tv.tv_usec == 0 { tv.tv_usec = 1000 }
            _ = setsockopt(fd, SOL_SOCKET, opt, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    /// Writes all of `bytes`; false when the peer went or the send timed out.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            off += n
        }
        return true
    }
}
