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
        let bound = try BoundSocket(host: bindHost, port: port, type: Int32(SOCK_DGRAM.rawValue), protocolName: "UDP", reuseAddress: false)
        self.fd = bound.fd
        self.localFamily = bound.family
        self.port = bound.port
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
