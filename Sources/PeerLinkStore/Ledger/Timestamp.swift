/// A wall-clock instant in milliseconds since 1970, as the ledger stores it. The ledger never
/// reads a clock: every operation that needs the time takes it as `now`.
public struct Timestamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01 00:00:00 UTC; negative before it.
    public let millisecondsSince1970: Int64

    /// The instant `millisecondsSince1970` milliseconds after 1970-01-01 00:00:00 UTC.
    public init(millisecondsSince1970: Int64) { self.millisecondsSince1970 = millisecondsSince1970 }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.millisecondsSince1970 < b.millisecondsSince1970 }

    /// `t` moved by `d` (saturating), to the millisecond.
    public static func + (t: Timestamp, d: Duration) -> Timestamp {
        let (s, atto) = d.components
        let ms = s.multipliedReportingOverflow(by: 1000)
        let total = ms.overflow ? (s < 0 ? Int64.min : Int64.max) : ms.partialValue.addingReportingOverflow(atto / 1_000_000_000_000_000).partialValue
        let sum = t.millisecondsSince1970.addingReportingOverflow(total)
        return Timestamp(millisecondsSince1970: sum.overflow ? (total < 0 ? .min : .max) : sum.partialValue)
    }

    public var description: String { "\(millisecondsSince1970) ms" }

    /// Encoded as the bare number of milliseconds.
    public init(from decoder: Decoder) throws {
        millisecondsSince1970 = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(millisecondsSince1970)
    }
}
