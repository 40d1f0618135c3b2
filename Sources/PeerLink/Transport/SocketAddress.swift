import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 socket address, built from numeric strings only (no name resolution).
struct IPSocketAddress {
    var storage = sockaddr_storage()
    var length: socklen_t
    var family: Int32

    init(host: String, port: UInt16, interfaceIndex: Int32 = 0) throws {
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

    init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
        self.family = Int32(storage.ss_family)
    }

    var port: UInt16 {
        withUnsafeBytes(of: storage) { raw in
            family == AF_INET ? UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
                              : UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
        }
    }

    var host: String {
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

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }
}
