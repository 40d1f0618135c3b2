import Foundation
import PeerLinkWire
#if canImport(Glibc)
import Glibc
#endif

/// The node's UDP socket for unreliable sends. Datagrams are routed by their path token to
/// the link that registered it; anything that does not parse is dropped and counted.
public final class UDPSocket: @unchecked Sendable {
    let fd: Int32
    public let port: UInt16
    private let localFamily: Int32
    private let lock = NSLock()
    private var handlers: [[UInt8]: @Sendable (DatagramEnvelope) -> Void] = [:]
    private var closed = false
    private var dropped = 0

    /// Binds `host` ("::" for all addresses, dual-stack, falling back to IPv4) on `port` (0: any).
    public init(bindHost: String = "::", port: UInt16 = 0) throws {
        var address = try IPSocketAddress(host: bindHost, port: port)
        var fd = socket(address.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd < 0, address.family == AF_INET6, bindHost == "::" {
            address = try IPSocketAddress(host: "0.0.0.0", port: port)
            fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        guard fd >= 0 else { throw TransportError.system(operation: "socket for UDP", errno: errno) }
        var zero: Int32 = 0
        if address.family == AF_INET6 {
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size))
        }
        guard address.withSockaddr({ bind(fd, $0, $1) }) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw TransportError.system(operation: "bind UDP port \(port) on \(bindHost)", errno: e)
        }
        var st = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &st) { p in p.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &len) } }
        self.fd = fd
        self.localFamily = address.family
        self.port = IPSocketAddress(storage: st, length: len).port
        let t = Thread { [self] in receiveLoop() }
        t.name = "peerlink.udp"
        t.start()
    }

    /// Datagrams received that were malformed or for no known path.
    public var droppedCount: Int { lock.withLock { dropped } }

    func register(_ token: [UInt8], _ handler: @escaping @Sendable (DatagramEnvelope) -> Void) {
        lock.withLock { handlers[token] = handler }
    }

    func unregister(_ token: [UInt8]) { lock.withLock { _ = handlers.removeValue(forKey: token) } }

    /// Sends one datagram; failures are ignored (the sends are unreliable by contract).
    func send(_ bytes: [UInt8], to host: String, port: UInt16) {
        guard let address = try? IPSocketAddress(host: host, port: port) else { return }
        var target = address
        if target.family == AF_INET, localFamily == AF_INET6, let mapped = try? IPSocketAddress(host: "::ffff:" + host, port: port) {
            target = mapped
        }
        _ = bytes.withUnsafeBytes { raw in
            target.withSockaddr { sendto(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL), $0, $1) }
        }
    }

    private func receiveLoop() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                break
            }
            if lock.withLock({ closed }) { break }
            guard let env = try? DatagramEnvelope.decode(Array(buffer[0..<n])),
                  let h = lock.withLock({ handlers[env.token] }) else {
                lock.withLock { dropped += 1 }
                continue
            }
            h(env)
        }
        Glibc.close(fd)
    }

    public func close() {
        let first: Bool = lock.withLock { defer { closed = true }; return !closed }
        if first { shutdown(fd, Int32(SHUT_RDWR)) }
    }
}
