import CPeerLinkSys
import Foundation
import PeerLinkWire
#if canImport(Glibc)
import Glibc
#endif

/// The node's UDP socket for unreliable sends. Datagrams are routed by their path token to
/// the link that registered it; anything that does not parse is dropped and counted.
///
/// Received on the process's `IOLoop` (no thread of its own); sends never wait: a datagram
/// the socket has no room for is dropped like any other lost datagram.
package final class UDPSocket: IOLoopHandler, @unchecked Sendable {
    let fd: Int32
    private let loop: IOLoop
    private var token: UInt64 = 0  // set once in init
    /// The local UDP port bound, told to peers in the hello.
    public let port: UInt16
    private let localFamily: Int32
    private let lock = NSLock()
    private var handlers: [[UInt8]: @Sendable (DatagramEnvelope) -> Void] = [:]
    private var closed = false
    private var dropped = 0
    private var reading = false  // the loop is in ioReady: close leaves the descriptor to it
    private var fdClosed = false

    /// Binds `host` ("::" for all addresses, dual-stack, falling back to IPv4) on `port` (0: any).
    public init(bindHost: String = "::", port: UInt16 = 0) throws {
        let bound = try BoundSocket(host: bindHost, port: port, type: Int32(SOCK_DGRAM.rawValue), protocolName: "UDP", reuseAddress: false)
        self.fd = bound.fd
        self.localFamily = bound.family
        self.port = bound.port
        loop = IOLoop.shared
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        token = loop.attach(self)
        let e = loop.control(PEERLINK_EPOLL_ADD, fd: fd, events: PEERLINK_EPOLLIN, token: token)
        if e != 0 {
            loop.detach(token)
            Glibc.close(fd)
            throw TransportError.system(operation: "watch the UDP socket on port \(port) (epoll_ctl)", errno: e)
        }
    }

    deinit {
        loop.detach(token)
        if !fdClosed { Glibc.close(fd) }
    }

    /// Datagrams received that were malformed or for no known path.
    public var droppedCount: Int { lock.withLock { dropped } }

    func register(_ token: [UInt8], _ handler: @escaping @Sendable (DatagramEnvelope) -> Void) {
        lock.withLock { handlers[token] = handler }
    }

    func unregister(_ token: [UInt8]) { lock.withLock { _ = handlers.removeValue(forKey: token) } }

    /// Sends one datagram; failures are ignored (the sends are unreliable by contract). After
    /// `close()` nothing is sent: the descriptor's number may belong to another file by then,
    /// so the send and the close never overlap (the lock; a UDP send does not wait).
    func send(_ bytes: [UInt8], to host: String, port: UInt16) {
        guard let address = try? IPSocketAddress(host: host, port: port) else { return }
        var target = address
        if target.family == AF_INET, localFamily == AF_INET6, let mapped = try? IPSocketAddress(host: "::ffff:" + host, port: port) {
            target = mapped
        }
        lock.withLock {
            guard !closed else { return }
            _ = bytes.withUnsafeBytes { raw in
                target.withSockaddr { sendto(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), $0, $1) }
            }
        }
    }

    /// Reads what has arrived (on the loop's thread), at most 64 datagrams per turn.
    func ioReady(_ events: UInt32, scratch: UnsafeMutableRawBufferPointer) {
        guard lock.withLock({ () -> Bool in
            if closed { return false }
            reading = true
            return true
        }) else { return }
        for _ in 0..<64 {
            let n = recv(fd, scratch.baseAddress, scratch.count, 0)
            if n < 0, errno == EINTR { continue }
            if n < 0 { break }  // nothing more queued, or an error (ICMP) that this call cleared
            guard let env = try? DatagramEnvelope.decode(Array(UnsafeRawBufferPointer(start: scratch.baseAddress, count: n))),
                  let h = lock.withLock({ handlers[env.token] }) else {
                lock.withLock { dropped += 1 }
                continue
            }
            h(env)
        }
        let closeNow: Bool = lock.withLock {
            reading = false
            guard closed, !fdClosed else { return false }
            fdClosed = true
            return true
        }
        if closeNow { Glibc.close(fd) }
    }

    /// Stops receiving and closes the socket (after a read in progress on the I/O loop ends).
    /// Closing twice does nothing.
    public func close() {
        let closeNow: Bool = lock.withLock {
            guard !closed else { return false }
            closed = true
            _ = loop.control(PEERLINK_EPOLL_DEL, fd: fd, events: 0, token: token)
            guard !reading else { return false }  // the loop closes it when it is done
            fdClosed = true
            return true
        }
        if closeNow { Glibc.close(fd) }
    }
}
