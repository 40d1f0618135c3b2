import Foundation

/// Sizes on the command line: "0", "65536", "64K", "64M", "2G" (powers of 1024; a trailing
/// "iB" or "B" is allowed: "64MiB").
enum ByteSizeArgument {
    static func parse(_ text: String) -> UInt64? {
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
        guard !t.isEmpty, t.allSatisfy(\.isNumber), let n = UInt64(t), n <= UInt64.max >> shift else { return nil }
        return n << shift
    }
}
