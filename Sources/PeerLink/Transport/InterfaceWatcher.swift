import CPeerLinkSys
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Closes IP links at once when the kernel says their path is gone: it follows link and
/// address changes over rtnetlink and, after each, fails every registered TCP connection whose
/// local address is no longer on an interface that is up and running (cable pulled, Wi-Fi
/// lost, interface taken down, address removed). Without it such a link would only be noticed
/// by the session's silence detection. Best effort: without rtnetlink it does nothing.
final class InterfaceWatcher: @unchecked Sendable {
    static let shared = InterfaceWatcher()

    private struct Entry { weak var connection: FDConnection?; let localHost: String }
    private let lock = NSLock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var started = false

    /// Watches `connection` (a connected TCP socket) until it is gone.
    func watch(_ connection: FDConnection) {
        guard let local = InterfaceWatcher.localHost(of: connection.fd) else { return }
        let start: Bool = lock.withLock {
            entries = entries.filter { $0.value.connection != nil }
            entries[ObjectIdentifier(connection)] = Entry(connection: connection, localHost: local)
            defer { started = true }
            return !started
        }
        if start { startListening() }
    }

    /// The rtnetlink socket's watch on the I/O loop (kept while it lasts).
    private var netlink: IOWatch?  // under lock

    private func startListening() {
        let fd = peerlink_netlink_route_open()
        guard fd >= 0 else { return }
        // Made under the lock, so a handler that stops the watch finds it.
        let watching: Bool = lock.withLock {
            netlink = try? IOWatch(fd: fd, events: .readable) { [weak self] _ in
                guard let self else { return }
                switch Self.drain(fd) {
                case .changed: check()
                case .quiet: break
                case .closed: stopListening(fd)
                }
            }
            return netlink != nil
        }
        if !watching { Glibc.close(fd) }
    }

    private func stopListening(_ fd: Int32) {
        let watch: IOWatch? = lock.withLock { defer { netlink = nil }; return netlink }
        watch?.cancel()
        Glibc.close(fd)
    }

    /// What reading everything the netlink socket holds found.
    enum Drained: Equatable { case changed, quiet, closed }

    /// Reads every queued message without blocking: `changed` when there was any (or the
    /// kernel dropped some: `ENOBUFS`), `closed` when the socket failed.
    static func drain(_ fd: Int32) -> Drained {
        var buffer = [UInt8](repeating: 0, count: 16384)
        var result = Drained.quiet
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { result = .changed; continue }
            if n < 0, errno == EINTR { continue }
            if n < 0, errno == ENOBUFS { result = .changed; continue }
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK { return result }
            return .closed
        }
    }

    /// Fails the connections whose local address is not on an interface that is up and running.
    func check() {
        let usable = InterfaceWatcher.usableAddresses()
        let doomed: [(FDConnection, String)] = lock.withLock {
            var out: [(FDConnection, String)] = []
            for (key, e) in entries {
                guard let c = e.connection else { entries[key] = nil; continue }
                let why = usable[e.localHost] ?? "no interface has address \(e.localHost) any more"
                if !why.isEmpty {
                    out.append((c, why))
                    entries[key] = nil
                }
            }
            return out
        }
        for (c, why) in doomed { c.abort(.pathGone(why)) }
    }

    /// Local addresses by text; the value is "" when the interface is up and running, else why not.
    static func usableAddresses() -> [String: String] {
        var out: [String: String] = [:]
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return out }
        defer { freeifaddrs(list) }
        var p: UnsafeMutablePointer<ifaddrs>? = first
        while let ifa = p {
            defer { p = ifa.pointee.ifa_next }
            guard let sa = ifa.pointee.ifa_addr, sa.pointee.sa_family == AF_INET || sa.pointee.sa_family == AF_INET6 else { continue }
            let host = numericHost(sa)
            let flags = Int32(bitPattern: ifa.pointee.ifa_flags)
            let name = String(cString: ifa.pointee.ifa_name)
            let up = flags & Int32(IFF_UP) != 0, running = flags & Int32(IFF_RUNNING) != 0
            out[host] = up && running ? "" : "network interface \(name) is \(up ? "up but has no carrier" : "down")"
        }
        return out
    }

    static func localHost(of fd: Int32) -> String? {
        var st = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &st) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        guard ok == 0 else { return nil }
        return withUnsafePointer(to: &st) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { numericHost($0) } }
    }

    /// Numeric text of an address, IPv4-mapped IPv6 as plain IPv4, without a scope suffix.
    static func numericHost(_ sa: UnsafePointer<sockaddr>) -> String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let len = socklen_t(sa.pointee.sa_family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
        guard getnameinfo(sa, len, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { return "" }
        var text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if let pct = text.firstIndex(of: "%") { text = String(text[..<pct]) }
        if text.hasPrefix("::ffff:"), text.contains(".") { text = String(text.dropFirst(7)) }
        return text
    }
}
