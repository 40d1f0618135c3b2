import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 socket address, built from numeric strings only (no name resolution).
package struct IPSocketAddress {
    package var storage = sockaddr_storage()
    package var length: socklen_t
    package var family: Int32

    package init(host: String, port: UInt16, interfaceIndex: Int32 = 0) throws {
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            family = AF_INET
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: v4) { dst.copyMemory(from: $0) } }
            return
        }
        var v6 = sockaddr_in6()
        var text = host
        var scope = UInt32(bitPattern: interfaceIndex)
        if let pct = host.firstIndex(of: "%") {
            text = String(host[..<pct])
            let zone = String(host[host.index(after: pct)...])
            scope = UInt32(zone) ?? if_nametoindex(zone)
        }
        guard inet_pton(AF_INET6, text, &v6.sin6_addr) == 1 else { throw TransportError.badAddress(host) }
        v6.sin6_family = sa_family_t(AF_INET6)
        v6.sin6_port = port.bigEndian
        v6.sin6_scope_id = scope
        family = AF_INET6
        length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: v6) { dst.copyMemory(from: $0) } }
    }

    package init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
        self.family = Int32(storage.ss_family)
    }

    package var port: UInt16 {
        withUnsafeBytes(of: storage) { raw in
            family == AF_INET ? UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
                              : UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
        }
    }

    package var host: String {
        var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET {
                var a = raw.load(as: sockaddr_in.self).sin_addr
                _ = inet_ntop(AF_INET, &a, &buf, socklen_t(buf.count))
            } else {
                var a = raw.load(as: sockaddr_in6.self).sin6_addr
                _ = inet_ntop(AF_INET6, &a, &buf, socklen_t(buf.count))
            }
        }
        let s = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if s.hasPrefix("::ffff:"), s.contains(".") { return String(s.dropFirst(7)) }
        return s
    }

    package func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }
}

/// A socket bound to `host`:`port` ("::" = every address, dual-stack, falling back to IPv4 in
/// a namespace without IPv6), with the port actually bound. The caller owns `fd`.
package struct BoundSocket {
    package let fd: Int32
    package let family: Int32
    package let port: UInt16

    package init(host: String, port: UInt16, type: Int32, protocolName: String, reuseAddress: Bool) throws {
        var address = try IPSocketAddress(host: host, port: port)
        var fd = socket(address.family, type | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd < 0, address.family == AF_INET6, host == "::" {
            address = try IPSocketAddress(host: "0.0.0.0", port: port)
            fd = socket(AF_INET, type | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        guard fd >= 0 else { throw TransportError.system(operation: "socket for \(protocolName)", errno: errno) }
        var one: Int32 = 1, zero: Int32 = 0
        if reuseAddress { _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
        if address.family == AF_INET6 {
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size))
        }
        guard address.withSockaddr({ bind(fd, $0, $1) }) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw TransportError.system(operation: "bind \(protocolName) port \(port) on \(host)", errno: e)
        }
        var st = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &st) { p in p.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &len) } }
        self.fd = fd
        self.family = address.family
        self.port = IPSocketAddress(storage: st, length: len).port
    }
}
