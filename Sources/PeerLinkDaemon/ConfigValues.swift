/// Sizes and durations as configuration files and the command line write them.
public enum ConfigValues {
    /// "0", "65536", "64K", "64M", "2G", "1T" (powers of 1024; "64MiB" and "64MB" mean the same),
    /// or a whole number of bytes.
    public static func bytes(_ text: String) -> UInt64? {
        var t = text.trimmingCharacters(in: .whitespaces).uppercased()
        if t.hasSuffix("IB") { t.removeLast(2) } else if t.hasSuffix("B") { t.removeLast() }
        var shift: UInt64 = 0
        switch t.last {
        case "K": shift = 10
        case "M": shift = 20
        case "G": shift = 30
        case "T": shift = 40
        default: break
        }
        if shift > 0 { t.removeLast() }
        guard !t.isEmpty, t.allSatisfy({ $0.isASCII && $0.isNumber }), let n = UInt64(t), n <= UInt64.max >> shift else { return nil }
        return n << shift
    }

    /// "90s", "30m", "12h", "7d", "2w", or several in a row ("1d12h"), in seconds.
    static func seconds(_ text: String) -> Int? {
        var total = 0
        var digits = ""
        var any = false
        for c in text.trimmingCharacters(in: .whitespaces) {
            if c.isASCII, c.isNumber { digits.append(c); continue }
            let unit: Int
            switch c {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86400
            case "w": unit = 7 * 86400
            default: return nil
            }
            guard let n = Int(digits) else { return nil }
            let (product, o1) = n.multipliedReportingOverflow(by: unit)
            let (sum, o2) = total.addingReportingOverflow(product)
            guard !o1, !o2 else { return nil }
            total = sum
            digits = ""
            any = true
        }
        guard digits.isEmpty, any else { return nil }
        return total
    }

    /// The shortest text `seconds(_:)` reads back as `s`.
    static func durationText(_ s: Int) -> String {
        guard s > 0 else { return "0s" }
        var left = s
        var out = ""
        for (unit, name) in [(86400, "d"), (3600, "h"), (60, "m"), (1, "s")] where left >= unit {
            out += "\(left / unit)\(name)"
            left %= unit
        }
        return out
    }

    /// The shortest text `bytes(_:)` reads back as `n`.
    static func bytesText(_ n: UInt64) -> String {
        for (shift, name) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] where n > 0 && n % (1 << UInt64(shift)) == 0 {
            return "\(n >> UInt64(shift))\(name)"
        }
        return "\(n)"
    }
}
