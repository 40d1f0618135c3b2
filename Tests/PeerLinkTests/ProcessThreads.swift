import Foundation

/// The process's thread count (from /proc).
enum ProcessThreads {
    static func count() -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("Threads:") {
            return Int(line.dropFirst(8).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }
}
