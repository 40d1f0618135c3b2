import Foundation

extension Duration {
    /// The duration in seconds, with its fraction (for arithmetic on monotonic seconds).
    package var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// Seconds as people write them in a message: "30", "2.5".
    package var secondsText: String {
        let s = inSeconds
        return s == s.rounded() && abs(s) < 1e15 ? String(Int(s)) : String(format: "%.1f", s)
    }
}
