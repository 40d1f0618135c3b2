/// A value bound to a statement's parameter: SQLite's five storage classes.
public enum SQLValue: Sendable, Equatable {
    /// SQL NULL.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// An 8-byte IEEE floating-point number.
    case real(Double)
    /// A string, stored as UTF-8.
    case text(String)
    /// Bytes, stored as they are.
    case blob([UInt8])
}

/// A Swift value that binds as an `SQLValue`.
public protocol SQLBindable {
    /// The value as bound to a statement's parameter.
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable { /** The value itself. */ public var sqlValue: SQLValue { self } }
extension Int64: SQLBindable { /** `.integer`. */ public var sqlValue: SQLValue { .integer(self) } }
extension Int: SQLBindable { /** `.integer`, widened to 64 bits. */ public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Double: SQLBindable { /** `.real`. */ public var sqlValue: SQLValue { .real(self) } }
extension String: SQLBindable { /** `.text`. */ public var sqlValue: SQLValue { .text(self) } }
extension Bool: SQLBindable { /** `.integer`: 1 for true, 0 for false. */ public var sqlValue: SQLValue { .integer(self ? 1 : 0) } }
extension Array: SQLBindable where Element == UInt8 { /** `.blob`. */ public var sqlValue: SQLValue { .blob(self) } }
extension Optional: SQLBindable where Wrapped: SQLBindable {
    /// The wrapped value's, or `.null` for nil.
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}
