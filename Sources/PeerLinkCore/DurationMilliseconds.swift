extension Duration {
    /// Whole milliseconds, rounded down: how the sans-I/O cores count time. Negative
    /// durations are 0, durations past `UInt64.max` milliseconds `UInt64.max`.
    package var wholeMilliseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (ms, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1000)
        let (total, carry) = ms.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000_000_000))
        return overflow || carry ? .max : total
    }
}

extension Duration {
    /// `ms` milliseconds (a difference of the cores' clock readings); past `Int64.max`, `Int64.max`.
    package static func milliseconds(clamping ms: UInt64) -> Duration { .milliseconds(Int64(clamping: ms)) }
}
