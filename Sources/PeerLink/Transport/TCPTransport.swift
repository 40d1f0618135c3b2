import CPeerLinkSys
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// TCP links: Noise messages with a 2-byte length prefix over a stream socket.
public struct TCPTransport: Transport {
    /// Always `.tcp`.
    public let medium = Medium.tcp
    /// Address to listen on: "::" (all, dual-stack) by default, or a numeric address.
    public var bindHost: String

    /// Makes a transport that listens on `bindHost` ("::" for every address, dual-stack).
    public init(bindHost: String = "::") { self.bindHost = bindHost }

    public func listen(port: UInt16, onConnection: @escaping @Sendable (MessageConnection) -> Void) throws -> TransportListener {
        try TCPListener(host: bindHost, port: port, onConnection: onConnection)
    }

    /// Dials without a thread: a non-blocking connect whose completion the I/O loop waits
    /// for, so a connect that hangs until `timeout` holds back nothing else.
    public func connect(to endpoint: TransportEndpoint, timeout: Duration) async throws -> MessageConnection {
        let address = try IPSocketAddress(host: endpoint.host, port: endpoint.port)
        let what = "connect to \(endpoint)"
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw TransportError.system(operation: "socket for \(what)", errno: errno) }
        var ok = false
        defer { if !ok { Glibc.close(fd) } }
        let r = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if r != 0 {
            guard errno == EINPROGRESS else { throw TransportError.system(operation: what, errno: errno) }
            switch await IOLoop.shared.wait(for: PEERLINK_EPOLLOUT, on: fd, timeout: timeout.inSeconds) {
            case .ready: break
            case .timedOut: throw TransportError.timedOut(operation: what, after: timeout)
            case .cancelled: throw CancellationError()
            }
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
            if err != 0 { throw TransportError.system(operation: what, errno: err) }
        }
        setNoDelay(fd)
        ok = true
        let conn = FDConnection(fd: fd, medium: .tcp, remoteDescription: "\(address.host):\(address.port)", lengthPrefixed: true,
                                remoteHost: address.host)
        InterfaceWatcher.shared.watch(conn)
        return conn
    }
}

package func setNoDelay(_ fd: Int32) {
    var one: Int32 = 1
    _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
}

/// A listening TCP socket, accepted from whenever the I/O loop finds it readable (no thread
/// of its own).
final class TCPListener: TransportListener, @unchecked Sendable {
    let fd: Int32
    let port: UInt16
    private let lock = NSLock()
    private var closed = false

    init(host: String, port: UInt16, onConnection: @escaping @Sendable (MessageConnection) -> Void) throws {
        let bound = try BoundSocket(host: host, port: port, type: Int32(SOCK_STREAM.rawValue), protocolName: "TCP", reuseAddress: true)
        guard Glibc.listen(bound.fd, 64) == 0 else {
            let e = errno
            Glibc.close(bound.fd)
            throw TransportError.system(operation: "listen on TCP port \(port)", errno: e)
        }
        self.fd = bound.fd
        self.port = bound.port
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        Task.detached { [self] in await acceptLoop(onConnection) }
    }

    private func acceptLoop(_ onConnection: @escaping @Sendable (MessageConnection) -> Void) async {
        while !lock.withLock({ closed }) {
            var st = sockaddr_storage()
            var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let c = withUnsafeMutablePointer(to: &st) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(fd, $0, &len) }
            }
            if c >= 0 { _ = fcntl(c, F_SETFD, FD_CLOEXEC) }
            if c < 0 {
                switch errno {
                case EAGAIN, EWOULDBLOCK: _ = await IOLoop.shared.wait(for: PEERLINK_EPOLLIN, on: fd, timeout: 3600)
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: try? await Runtime.sleep(nanoseconds: 100_000_000)  // out of descriptors: later
                default: Glibc.close(fd); return  // shut down
                }
                continue
            }
            if lock.withLock({ closed }) { Glibc.close(c); break }
            setNoDelay(c)
            let peer = IPSocketAddress(storage: st, length: len)
            let conn = FDConnection(fd: c, medium: .tcp, remoteDescription: "\(peer.host):\(peer.port)", lengthPrefixed: true,
                                    remoteHost: peer.host)
            InterfaceWatcher.shared.watch(conn)
            onConnection(conn)
        }
        Glibc.close(fd)
    }

    func close() {
        let first: Bool = lock.withLock { defer { closed = true }; return !closed }
        if first { shutdown(fd, Int32(SHUT_RDWR)) }
    }
}
