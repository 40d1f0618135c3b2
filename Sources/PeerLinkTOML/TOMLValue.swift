/// A value of a TOML document, as PeerLink's configuration and scenario files use them.
/// Dates and times are not used by any file PeerLink reads and are refused when parsed.
public indirect enum TOMLValue: Equatable, Sendable {
    case string(String)
    case integer(Int)
    case float(Double)
    case bool(Bool)
    case array([TOMLValue])
    case table([String: TOMLValue])

    /// The type's name as an error message says it.
    public var typeName: String {
        switch self {
        case .string: return "string"
        case .integer: return "integer"
        case .float: return "float"
        case .bool: return "boolean"
        case .array: return "array"
        case .table: return "table"
        }
    }
}
