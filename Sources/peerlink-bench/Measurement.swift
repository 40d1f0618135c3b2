import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock and CPU time (user + system, this whole process: the bench holds both ends) of
/// one measured piece of work.
struct Measured {
    let seconds: Double
    let cpuSeconds: Double

    /// CPU seconds per GiB when `bytes` moved during the work.
    func cpuPerGiB(_ bytes: Int) -> Double { cpuSeconds / (Double(bytes) / 1_073_741_824) }
}

/// Runs `body` and returns how long it took and how much CPU the process spent meanwhile.
func measured(_ body: () async throws -> Void) async rethrows -> Measured {
    let cpu = processCPUSeconds()
    let t = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Measured(seconds: Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9, cpuSeconds: processCPUSeconds() - cpu)
}

/// User plus system CPU seconds this process has used (getrusage RUSAGE_SELF).
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// `value` to `places` decimals, for JSON output.
func rounded(_ value: Double, _ places: Int = 1) -> Double {
    let scale = pow(10, Double(places))
    return (value * scale).rounded() / scale
}

/// Prints `object` as one line of JSON with sorted keys (the benchmarks' machine-readable line).
func printJSON(_ object: [String: Any]) {
    guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
    print(String(decoding: data, as: UTF8.self))
}
