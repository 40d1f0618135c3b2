import Foundation
import PeerLink
#if canImport(Glibc)
import Glibc
#endif

/// One line of `/proc/net/if_inet6`: an IPv6 address of an interface with its flags.
struct IPv6InterfaceAddress: Sendable, Equatable {
    /// The address in its usual text form (`fe80::4400:ff:fe00:0`).
    var address: String
    var interfaceIndex: Int
    var prefixLength: Int
    /// IPv6 scope as the kernel reports it (0x20 = link).
    var scope: Int
    /// IFA_F_* flags.
    var flags: Int
    var interface: String

    static let scopeLink = 0x20
    static let flagTentative = 0x40, flagDADFailed = 0x08, flagDeprecated = 0x20, flagOptimistic = 0x04

    /// A link-local address the kernel lets a socket use: DAD finished and did not fail.
    ///
    /// With `optimistic`, also an optimistic address whose DAD still runs (RFC 4429; made only
    /// where the machine sets `optimistic_dad`, see `OptimisticDAD`). That serves the side
    /// that is dialled: the kernel delivers to it and answers neighbour solicitations for it
    /// at once. It does not serve the side that dials first: the kernel sends no neighbour
    /// solicitation from an optimistic address, so its first packet waits for DAD anyway.
    func isUsableLinkLocal(optimistic: Bool) -> Bool {
        isLiveLinkLocal && (flags & Self.flagTentative == 0 || (optimistic && isOptimistic))
    }

    /// A link-local address whose DAD has not failed (usable yet or not).
    var isLiveLinkLocal: Bool { scope == Self.scopeLink && flags & (Self.flagDADFailed | Self.flagDeprecated) == 0 }

    /// Made optimistic: usable while in DAD.
    var isOptimistic: Bool { flags & Self.flagOptimistic != 0 }
    /// Where it stands in DAD.
    var state: LinkLocalState {
        flags & Self.flagTentative == 0 ? .usable : isOptimistic ? .optimistic : .inDAD
    }

    /// Parses one line (`fe80000000000000440000fffe000000 05 40 20 80 p2p-wlan0-0`); nil when
    /// it is not one.
    init?(line: Substring) {
        let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard f.count == 6, f[0].count == 32, let idx = Int(f[1], radix: 16), let plen = Int(f[2], radix: 16),
              let scope = Int(f[3], radix: 16), let flags = Int(f[4], radix: 16),
              let text = IPv6InterfaceAddress.format(hex: f[0]) else { return nil }
        address = text
        interfaceIndex = idx
        prefixLength = plen
        self.scope = scope
        self.flags = flags
        interface = String(f[5])
    }

    /// 32 hex digits → the compressed text form, nil when not hex.
    static func format(hex: Substring) -> String? {
        var bytes = [UInt8](repeating: 0, count: 16)
        let chars = Array(hex.utf8)
        guard chars.count == 32 else { return nil }
        for i in 0..<16 {
            guard let hi = hexValue(chars[2 * i]), let lo = hexValue(chars[2 * i + 1]) else { return nil }
            bytes[i] = hi << 4 | lo
        }
        var addr = in6_addr()
        withUnsafeMutableBytes(of: &addr) { $0.copyBytes(from: bytes) }
        var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &addr, &buf, socklen_t(buf.count)) != nil else { return nil }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Link-local addresses from the text of `/proc/net/if_inet6`. Pure; the file is read by
/// the caller.
enum IPv6LinkLocal {
    static func parse(_ text: String) -> [IPv6InterfaceAddress] {
        text.split(separator: "\n").compactMap { IPv6InterfaceAddress(line: $0) }
    }

    /// The usable link-local address of `interface`, if it has one yet (`optimistic`: see
    /// `IPv6InterfaceAddress.isUsableLinkLocal`).
    static func usable(on interface: String, in text: String, optimistic: Bool = false) -> String? {
        usableAddress(on: interface, in: text, optimistic: optimistic)?.address
    }

    /// The link-local address of `interface` whose DAD has not failed, usable yet or not.
    static func knownAddress(on interface: String, in text: String) -> IPv6InterfaceAddress? {
        parse(text).first { $0.interface == interface && $0.isLiveLinkLocal }
    }

    /// As `usable`, with the address's flags.
    static func usableAddress(on interface: String, in text: String, optimistic: Bool = false) -> IPv6InterfaceAddress? {
        parse(text).first { $0.interface == interface && $0.isUsableLinkLocal(optimistic: optimistic) }
    }

    /// What the interface's link-local addresses are doing, for an error message.
    static func status(of interface: String, in text: String) -> String {
        let mine = parse(text).filter { $0.interface == interface && $0.scope == IPv6InterfaceAddress.scopeLink }
        guard !mine.isEmpty else { return "no IPv6 link-local address on \(interface)" }
        return mine.map { a in
            let state = a.flags & IPv6InterfaceAddress.flagDADFailed != 0 ? "duplicate (DAD failed)"
                : a.flags & IPv6InterfaceAddress.flagTentative == 0 ? "usable"
                : a.isOptimistic ? "optimistic (DAD running)" : "tentative (DAD running)"
            return "\(a.address) \(state)"
        }.joined(separator: ", ")
    }
}
