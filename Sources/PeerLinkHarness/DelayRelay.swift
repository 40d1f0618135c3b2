import CPeerLinkSys
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay that shapes a link both ways: a one-way delay on every byte and, optionally, a
/// rate — the labs' stand-in for netem, which these kernels lack. It listens on
/// `host:listenPort` and joins each connection to `host:targetPort`. The IP lab's receiver
/// agent runs one per delayed link in its own namespace, so the link's veth still carries
/// (and nftables still cuts) the traffic between the nodes; the Bluetooth lab runs one for
/// its Wi-Fi path; `peerlink-bench connect-delay` runs one on loopback.
/// The delay applies to the payload; the kernel's own ACKs between dialler and relay are not
/// delayed, so PeerLink's probes (which are payload) see RTT + 2 × delay.
public final class DelayRelay: @unchecked Sendable {
    public let host: String
    public let port: UInt16
    private let listenFD: Int32
    private let targetPort: UInt16
    private let delay: Int
    private let bytesPerSecond: Int
    private let lock = NSLock()
    private var closed = false
    private var connections: [Int32] = []

    /// Binds and starts accepting; `listenPort` 0 picks a free port (see `port`).
    public init(host: String, listenPort: UInt16, targetPort: UInt16, delayMilliseconds: Int, bytesPerSecond: Int = 0) throws {
        self.host = host
        self.targetPort = targetPort
        self.delay = delayMilliseconds
        self.bytesPerSecond = bytesPerSecond
        var addr = try Self.address(host, listenPort)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw AgentError("relay: socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw AgentError("relay: bind/listen \(host):\(listenPort): \(String(cString: strerror(e)))")
        }
        var got = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &got) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        listenFD = fd
        port = UInt16(bigEndian: got.sin_port)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Stops accepting and closes every relayed connection.
    public func close() {
        let fds: [Int32] = lock.withLock {
            guard !closed else { return [] }
            closed = true
            return [listenFD] + connections
        }
        for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
        Glibc.close(listenFD)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listenFD, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            guard let target = try? connectTarget() else { Glibc.close(client); continue }
            var one: Int32 = 1
            for fd in [client, target] { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }
            let ok: Bool = lock.withLock {
                guard !closed else { return false }
                connections += [client, target]
                return true
            }
            guard ok else { Glibc.close(client); Glibc.close(target); return }
            let ends = Ends(a: client, b: target, lingerSeconds: Double(delay) / 1000 + 1)
            Thread.detachNewThread { [self] in pump(from: client, to: target, ends: ends) }
            Thread.detachNewThread { [self] in pump(from: target, to: client, ends: ends) }
        }
    }

    private func connectTarget() throws -> Int32 {
        var addr = try Self.address(host, targetPort)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw AgentError("relay: socket") }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { Glibc.close(fd); throw AgentError("relay: connect to \(host):\(targetPort) failed") }
        return fd
    }

    /// Moves bytes one way, each once the emulated link has sent it and `delay` ms later. EOF is passed on once everything
    /// before it has left; an error (reset) closes both ends, as a real path would.
    private func pump(from src: Int32, to dst: Int32, ends: Ends) {
        var queue = DelayQueue(delay: delay * 1000, bytesPerSecond: bytesPerSecond)
        var buffer = [UInt8](repeating: 0, count: queue.readSize)
        var eof = false
        while true {
            let due = queue.pop(at: Self.nowMicroseconds())
            if !due.isEmpty, !Self.writeAll(dst, due) { ends.closeBoth(self); return }
            if eof, queue.isEmpty {
                shutdown(dst, Int32(SHUT_WR))
                ends.finishedOneWay(self)
                return
            }
            // Waits to the microsecond: a millisecond poll timeout added up to a millisecond
            // per leg, which showed in the connect-delay figures.
            var wait = queue.nextDue.map { max(0, $0 - Self.nowMicroseconds()) } ?? -1
            let events: Int16 = (eof || !queue.hasRoom) ? 0 : Int16(POLLIN)
            if events == 0 && wait < 0 { wait = 100_000 }
            var revents: Int16 = 0
            let n = peerlink_poll_one_us(src, events, &revents, Int64(wait))
            if n < 0 { if errno == EINTR { continue }; ends.closeBoth(self); return }
            guard n > 0, revents != 0 else { continue }
            let r = read(src, &buffer, buffer.count)
            if r > 0 {
                // Stamped with the next whole microsecond, so nothing leaves before `delay`
                // has fully passed (the clock floors).
                queue.push(Array(buffer[0..<r]), at: Self.nowMicroseconds(roundingUp: true))
            } else if r == 0 {
                eof = true
            } else if errno != EINTR && errno != EAGAIN {
                ends.closeBoth(self)
                return
            }
        }
    }

    fileprivate func forget(_ fds: [Int32]) {
        lock.withLock { connections.removeAll { fds.contains($0) } }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let w = bytes[off...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if w < 0 { if errno == EINTR { continue }; return false }
            off += w
        }
        return true
    }

    /// Monotonic microseconds, floored (or rounded up).
    private static func nowMicroseconds(roundingUp: Bool = false) -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return ts.tv_sec * 1_000_000 + (ts.tv_nsec + (roundingUp ? 999 : 0)) / 1000
    }

    private static func address(_ host: String, _ port: UInt16) throws -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else { throw AgentError("relay: not an IPv4 address: \(host)") }
        return addr
    }
}

/// The two sockets of one relayed connection, closed once: after both directions ended, or
/// at once when one failed.
private final class Ends: @unchecked Sendable {
    let a: Int32, b: Int32
    /// How long the fds stay allocated after shutdown: longer than a pump can still be busy.
    let lingerSeconds: Double
    private let lock = NSLock()
    private var open = 2
    private var closed = false
    init(a: Int32, b: Int32, lingerSeconds: Double) { self.a = a; self.b = b; self.lingerSeconds = lingerSeconds }

    func finishedOneWay(_ relay: DelayRelay) {
        let last: Bool = lock.withLock { open -= 1; return open == 0 }
        if last { closeBoth(relay) }
    }

    func closeBoth(_ relay: DelayRelay) {
        let first: Bool = lock.withLock { defer { closed = true }; return !closed }
        guard first else { return }
        relay.forget([a, b])
        // shutdown wakes the other direction's poll; close after, so no fd number is reused
        // while that thread may still use it.
        shutdown(a, Int32(SHUT_RDWR))
        shutdown(b, Int32(SHUT_RDWR))
        DispatchQueue.global().asyncAfter(deadline: .now() + lingerSeconds) { Glibc.close(self.a); Glibc.close(self.b) }
    }
}
