import Foundation
import PeerLink
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// TCP over a group's IPv6 link-local addresses. Two things make traffic really cross the
/// radio when both ends are on one machine (as in the lab), and pick the right radio on any
/// machine with several: the peer's address carries the local interface as its scope
/// (`fe80::…%p2p-wlan1-0`), and the socket is bound to that interface (`SO_BINDTODEVICE`).
/// Without them the kernel delivers to a local address through loopback.
public enum LinkLocalSockets {
    /// `address` with `interface` as its zone (`fe80::1%wlan0`); any zone already on
    /// `address` is replaced.
    public static func scoped(_ address: String, interface: String) -> String {
        let bare = address.split(separator: "%", maxSplits: 1).first.map(String.init) ?? address
        return "\(bare)%\(interface)"
    }

    /// Binds `fd` to `interface` (`SO_BINDTODEVICE`): its packets leave through that interface
    /// only, and a listener accepts only connections that arrive there. Since Linux 5.7 an
    /// unprivileged process may do this once per socket.
    public static func bindToDevice(_ fd: Int32, interface: String) throws {
        var name = Array(interface.utf8CString)
        guard name.count <= Int(IFNAMSIZ) else { throw TransportError.badAddress("interface name too long: \(interface)") }
        let r = setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, &name, socklen_t(name.count))
        guard r == 0 else { throw TransportError.system(operation: "SO_BINDTODEVICE \(interface)", errno: errno) }
    }

    /// A connected TCP socket to `address` (a peer's link-local address, no zone needed) on
    /// `port`, through `interface`, dialled on a thread of its own. The caller owns the
    /// descriptor.
    public static func connect(to address: String, port: UInt16, interface: String, timeout: Duration = .seconds(10)) async throws -> Int32 {
        try await BlockingCall.run("pl.dial.wifi") { try connectBlocking(to: address, port: port, interface: interface, timeout: timeout.inSeconds) }
    }

    static func connectBlocking(to address: String, port: UInt16, interface: String, timeout: Double) throws -> Int32 {
        let target = try IPSocketAddress(host: scoped(address, interface: interface), port: port)
        guard target.family == AF_INET6 else { throw TransportError.badAddress("\(address) is not an IPv6 address") }
        let what = "connect to [\(scoped(address, interface: interface))]:\(port)"
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TransportError.system(operation: "socket for \(what)", errno: errno) }
        var ok = false
        defer { if !ok { close(fd) } }
        try bindToDevice(fd, interface: interface)
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        if target.withSockaddr({ Glibc.connect(fd, $0, $1) }) != 0 {
            guard errno == EINPROGRESS else { throw TransportError.system(operation: what, errno: errno) }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                let n = poll(&pfd, 1, Int32(max(0, deadline.timeIntervalSinceNow * 1000)))
                if n < 0, errno == EINTR { continue }
                if n < 0 { throw TransportError.system(operation: what, errno: errno) }
                if n == 0 { throw TransportError.timedOut(operation: what, after: .seconds(timeout)) }
                break
            }
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
            if err != 0 { throw TransportError.system(operation: what, errno: err) }
        }
        _ = fcntl(fd, F_SETFL, flags)
        setNoDelay(fd)
        ok = true
        return fd
    }

    /// A TCP listener on every address of `interface` and bound to it (port 0: any free port).
    public static func listen(interface: String, port: UInt16 = 0) throws -> LinkLocalListener {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TransportError.system(operation: "socket for a listener on \(interface)", errno: errno) }
        var ok = false
        defer { if !ok { close(fd) } }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        try bindToDevice(fd, interface: interface)
        let any = try IPSocketAddress(host: "::", port: port)
        guard any.withSockaddr({ bind(fd, $0, $1) }) == 0 else {
            throw TransportError.system(operation: "bind TCP port \(port) on \(interface)", errno: errno)
        }
        guard Glibc.listen(fd, 16) == 0 else { throw TransportError.system(operation: "listen on \(interface)", errno: errno) }
        var st = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &st) { p in p.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &len) } }
        ok = true
        return LinkLocalListener(fd: fd, port: IPSocketAddress(storage: st, length: len).port, interface: interface)
    }
}

/// A TCP listener bound to one interface (see `LinkLocalSockets.listen`).
public final class LinkLocalListener: Sendable {
    /// The listening socket; closed by `close()` or when the listener is released.
    public let fd: Int32
    /// The TCP port bound (the kernel's choice when 0 was asked for).
    public let port: UInt16
    /// The interface the socket is bound to (`SO_BINDTODEVICE`).
    public let interface: String
    private struct State {
        var closed = false
        /// Accepts under way: while one waits on `fd`, `close()` leaves the descriptor to it (a
        /// number closed under a waiting call could be reused by another file first).
        var accepting = 0
        var fdClosed = false
    }
    private let state = Mutex(State())

    init(fd: Int32, port: UInt16, interface: String) {
        self.fd = fd
        self.port = port
        self.interface = interface
    }

    deinit { close() }

    /// The next connection (its descriptor, owned by the caller) and the peer's address,
    /// waited for on a thread of its own; throws once the listener is closed.
    public func accept(timeout: Duration = .seconds(30)) async throws -> (fd: Int32, peer: String) {
        try await BlockingCall.run("pl.accept.wifi") { try self.acceptBlocking(timeout: timeout.inSeconds) }
    }

    func acceptBlocking(timeout: Double) throws -> (fd: Int32, peer: String) {
        try state.withLock { s throws(TransportError) in
            if s.closed { throw TransportError.closed }
            s.accepting += 1
        }
        defer {
            let closeNow: Bool = state.withLock { s in
                s.accepting -= 1
                guard s.closed, s.accepting == 0, !s.fdClosed else { return false }
                s.fdClosed = true
                return true
            }
            if closeNow { Glibc.close(fd) }
        }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let n = poll(&pfd, 1, Int32(max(0, deadline.timeIntervalSinceNow * 1000)))
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw TransportError.system(operation: "accept on \(interface)", errno: errno) }
            if n == 0 { throw TransportError.timedOut(operation: "accept on \(interface)", after: .seconds(timeout)) }
            break
        }
        if state.withLock({ $0.closed }) { throw TransportError.closed }
        var st = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let c = withUnsafeMutablePointer(to: &st) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(fd, $0, &len) }
        }
        guard c >= 0 else { throw TransportError.system(operation: "accept on \(interface)", errno: errno) }
        _ = fcntl(c, F_SETFD, FD_CLOEXEC)
        setNoDelay(c)
        return (c, IPSocketAddress(storage: st, length: len).host)
    }

    /// Closes the socket; a waiting `accept` wakes (shutdown), throws, and closes the
    /// descriptor as it leaves.
    public func close() {
        let (first, closeNow): (Bool, Bool) = state.withLock { s in
            let first = !s.closed
            s.closed = true
            guard first, s.accepting == 0 else { return (first, false) }
            s.fdClosed = true
            return (true, true)
        }
        guard first else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        if closeNow { Glibc.close(fd) }
    }
}
