/// Why bytes from the network (or a record from discovery) were rejected.
public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input ended before a field of `needed` more bytes could be read.
    case truncated(field: String, needed: Int, available: Int)
    /// The input had bytes left over after a complete structure.
    case trailingBytes(Int)
    /// A frame or record type byte that this version does not know.
    case unknownType(context: String, value: UInt8)
    /// A length or value outside the protocol's limits.
    case limitExceeded(field: String, value: Int, limit: Int)
    /// A field whose content is not valid (bad UTF-8, duplicate TLV, zero where forbidden…).
    case invalid(field: String, reason: String)

    public var description: String {
        switch self {
        case let .truncated(field, needed, available):
            return "truncated input: \(field) needs \(needed) byte(s), \(available) left"
        case let .trailingBytes(n):
            return "malformed input: \(n) unexpected byte(s) after the end of the structure"
        case let .unknownType(context, value):
            return "unknown \(context) type 0x\(String(value, radix: 16))"
        case let .limitExceeded(field, value, limit):
            return "\(field) is \(value), above the limit of \(limit)"
        case let .invalid(field, reason):
            return "invalid \(field): \(reason)"
        }
    }
}
