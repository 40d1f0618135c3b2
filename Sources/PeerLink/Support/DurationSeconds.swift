import Foundation

extension Duration {
    /// The duration in seconds, with its fraction (for arithmetic on monotonic seconds): the
    /// Double nearest to it at nanosecond precision, so `.milliseconds(2300)` is exactly
    /// `2300 / 1000.0` (virtual-time runs that took seconds as Doubles replay unchanged).
    package var inSeconds: Double {
        let (seconds, attoseconds) = components
        guard abs(seconds) < 4_000_000 else { return Double(seconds) + Double(attoseconds) / 1e18 }
        return Double(seconds * 1_000_000_000 + attoseconds / 1_000_000_000) / 1e9
    }

    /// Seconds as people write them in a message: "30", "2.5".
    package var secondsText: String {
        let s = inSeconds
        return s == s.rounded() && abs(s) < 1e15 ? String(Int(s)) : String(format: "%.1f", s)
    }
}
