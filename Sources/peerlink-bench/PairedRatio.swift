import Foundation

/// PeerLink's throughput against raw TCP measured right before and right after each of its
/// runs. This host's loopback moves between speed modes within seconds (raw TCP 1.2–3 GB/s in
/// one session), so a single baseline at the start can make the same build look twice as fast
/// or slow; each round's ratio is taken against the mean of the raw runs beside it, and the
/// median of the rounds is reported.
struct PairedRatio {
    /// MB/s of each PeerLink run, and of the raw runs (one more than rounds).
    var peerlink: [Double] = []
    var raw: [Double] = []
    var ratios: [Double] = []
    /// PeerLink's CPU seconds per GiB over all its runs, and raw TCP's over all of its.
    var cpuPerGiB = 0.0
    var rawCPUPerGiB = 0.0

    var median: Double { ratios.sorted()[ratios.count / 2] }
    var medianMBps: Double { peerlink.sorted()[peerlink.count / 2] }

    /// Runs raw TCP, then `rounds` times PeerLink's `run` followed by raw TCP, `bytes` each.
    static func measure(rounds: Int, bytes: Int, _ run: () async throws -> Measured) async throws -> PairedRatio {
        var p = PairedRatio()
        var plCPU = 0.0, rawCPU = 0.0
        func rawRun() async throws -> Double {
            let m = try await measured { _ = try await rawTCP(bytes: bytes) }
            rawCPU += m.cpuSeconds
            return mbps(bytes, m.seconds)
        }
        var before = try await rawRun()
        p.raw.append(before)
        for _ in 0..<max(1, rounds) {
            let m = try await run()
            plCPU += m.cpuSeconds
            let rate = mbps(bytes, m.seconds)
            let after = try await rawRun()
            p.raw.append(after)
            p.peerlink.append(rate)
            p.ratios.append(rate / ((before + after) / 2))
            before = after
        }
        let gib = Double(bytes) / 1_073_741_824
        p.cpuPerGiB = plCPU / (gib * Double(p.peerlink.count))
        p.rawCPUPerGiB = rawCPU / (gib * Double(p.raw.count))
        return p
    }

    /// "ratio to raw 0.61 (rounds 0.58 0.61 0.66; raw beside it 1260–2710 MB/s)".
    var text: String {
        String(format: "ratio to raw %.3f (rounds %@; raw beside it %.0f–%.0f MB/s)", median,
               ratios.map { String(format: "%.2f", $0) }.joined(separator: " "), raw.min() ?? 0, raw.max() ?? 0)
    }

    var json: [String: Any] {
        ["mbps": rounded(medianMBps), "ratio": rounded(median, 3), "ratios": ratios.map { rounded($0, 3) },
         "raw_mbps": raw.map { rounded($0) }]
    }
}
