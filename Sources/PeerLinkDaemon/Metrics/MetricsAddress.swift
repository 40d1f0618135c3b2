import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the metrics endpoint listens: the configuration's `metrics = "host:port"`. The host
/// is an IPv4 address, an IPv6 address in brackets (`[::1]:9464`) or a name the resolver
/// knows (`localhost`); port 0 (tests) takes a free port.
public struct MetricsAddress: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: UInt16

    public init(host: String, port: UInt16) { self.host = host; self.port = port }

    /// Reads `host:port`; nil when it is not that shape.
    public init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":"), colon > text.startIndex,
              let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { return nil }
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            return nil
        }
        self.init(host: host, port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// A listening TCP socket bound here (close it), or why not.
    func listen(backlog: Int32 = 16) throws(UnixSocket.Failure) -> Int32 {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw UnixSocket.Failure(description: "cannot resolve \(host): \(String(cString: gai_strerror(rc)))", code: EADDRNOTAVAIL)
        }
        defer { freeaddrinfo(list) }
        var failure = UnixSocket.Failure(description: "no address for \(self)", code: EADDRNOTAVAIL)
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let ai = next {
            next = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { failure = UnixSocket.failure("socket()"); continue }
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            if bind(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0, Glibc.listen(fd, backlog) == 0 { return fd }
            failure = UnixSocket.failure("cannot listen on \(self)")
            close(fd)
        }
        throw failure
    }

    /// The port `fd` is bound to (the one the kernel chose for port 0).
    static func boundPort(_ fd: Int32) -> UInt16? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) } }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) } }
        default:
            return nil
        }
    }
}
