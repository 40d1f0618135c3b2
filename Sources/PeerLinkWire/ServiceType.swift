/// An application's service name, validated with MultipeerConnectivity's rules:
/// 1–15 characters of ASCII lowercase letters, digits and hyphens, at least one letter,
/// no leading, trailing or adjacent hyphens.
public struct ServiceType: Hashable, Sendable, CustomStringConvertible {
    public let name: String

    public init(_ name: String) throws {
        let u = Array(name.utf8)
        func fail(_ why: String) -> WireError { .invalid(field: "service type '\(name)'", reason: why) }
        guard !u.isEmpty else { throw fail("it is empty; use 1-15 characters such as 'field-demo'") }
        guard u.count <= 15 else { throw fail("it has \(u.count) characters; the maximum is 15") }
        var hasLetter = false
        for (i, c) in u.enumerated() {
            switch c {
            case UInt8(ascii: "a")...UInt8(ascii: "z"): hasLetter = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"): break
            case UInt8(ascii: "-"):
                if i == 0 || i == u.count - 1 { throw fail("it may not start or end with a hyphen") }
                if u[i - 1] == UInt8(ascii: "-") { throw fail("it may not contain adjacent hyphens") }
            default:
                throw fail("only lowercase ASCII letters, digits and hyphens are allowed")
            }
        }
        guard hasLetter else { throw fail("it needs at least one letter") }
        self.name = name
    }

    public var description: String { name }
    /// The DNS-SD service type for TCP links, e.g. `_field-demo._tcp`.
    public var dnssdTCP: String { "_\(name)._tcp" }
    /// The DNS-SD service type for UDP, e.g. `_field-demo._udp`.
    public var dnssdUDP: String { "_\(name)._udp" }
}
