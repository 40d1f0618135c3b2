import Foundation

/// `peerlink-bench cpu [MEGABYTES]`: CPU seconds per GiB moved, both ends, for reliable
/// 64 KiB messages and a file transfer over a loopback session, against iperf3's (both of
/// its processes, from its JSON report) and a raw TCP socket's in this process. The bench
/// holds both ends, so getrusage(RUSAGE_SELF) user + system counts both.
enum CPUBench {
    static let help = """
        usage: peerlink-bench cpu [MEGABYTES]
          CPU seconds (user + system) per GiB moved, both ends, for MEGABYTES (default 512) of
          reliable 64 KiB messages and of a file transfer over a loopback session, against
          iperf3 (3 s; cpu_utilization_percent host_total + remote_total of its JSON report)
          and raw TCP in this process. Prints the ratios (issue 16's target: <= 3 x iperf3's)
          and a JSON line. Two floors, measured here too: raw TCP plus sealing and opening every
          byte with the links' cipher (what 64 KiB messages cannot do below), and that plus
          SHA-256 of every byte at both ends and reading and writing the file (what a file
          cannot); each PeerLink row shows its multiple of its floor.
        """

    /// One workload's CPU per GiB and throughput.
    struct Row {
        let name: String
        let cpuPerGiB: Double
        /// Throughput; nil for a floor (computed, not a transfer).
        let mbps: Double?
        /// The floor's CPU per GiB, for a PeerLink row.
        var floor: Double?

        init(_ name: String, bytes: Int, _ m: Measured) {
            self.name = name
            cpuPerGiB = m.cpuPerGiB(bytes)
            mbps = Double(bytes) / m.seconds / 1_048_576
        }
        init(_ name: String, iperf3: IPerf3) {
            self.name = name
            cpuPerGiB = iperf3.cpuPerGiB
            mbps = iperf3.mbps
        }
        init(floor name: String, cpuPerGiB: Double) {
            self.name = name
            self.cpuPerGiB = cpuPerGiB
            mbps = nil
        }
    }

    static func run(_ args: [String]) async throws {
        if args.first == "--help" || args.first == "-h" { print(help); return }
        guard let mib = args.isEmpty ? 512 : args.first.flatMap(Int.init), mib > 0 else { print(help); exit(2) }
        let bytes = mib << 20
        print("PeerLink CPU per GiB moved (both ends, user + system), \(mib) MiB per transfer, loopback")
        let ip = IPerf3.run()
        var rows = try await measure(bytes: bytes)
        if let ip { rows.insert(Row("iperf3 (3 s, both processes)", iperf3: ip), at: 0) }
        let base = ip?.cpuPerGiB
        for r in rows { print(line(r, base: base)) }
        if base == nil { print("cpu       (no iperf3 at /usr/bin/iperf3: no ratio)") }
        printJSON(["bench": "cpu", "megabytes": mib, "rows": rows.map { json($0, base: base) }])
    }

    /// Raw TCP, the floors, then PeerLink's two workloads, each `bytes` long.
    static func measure(bytes: Int) async throws -> [Row] {
        let raw = Row("raw TCP socket (this process)", bytes: bytes, try await measured { _ = try await rawTCP(bytes: bytes) })
        let cipherFloor = Row(floor: "floor: raw TCP + cipher both ends", cpuPerGiB: raw.cpuPerGiB + (try WorkFloor.cipherSecondsPerGiB(bytes: bytes)))
        let fileFloor = Row(floor: "floor: + SHA-256 both ends, file I/O", cpuPerGiB: cipherFloor.cpuPerGiB
                            + WorkFloor.twoHashesSecondsPerGiB(bytes: bytes) + (try WorkFloor.fileCopySecondsPerGiB(bytes: bytes)))
        var messages = Row("peerlink reliable 64 KiB messages", bytes: bytes / 65536 * 65536,
                           try await sessionMessages(count: bytes / 65536, size: 65536))
        messages.floor = cipherFloor.cpuPerGiB
        var file = Row("peerlink resource (file, SHA-256)", bytes: bytes, try await sessionResource(bytes: bytes))
        file.floor = fileFloor.cpuPerGiB
        return [raw, cipherFloor, fileFloor, messages, file]
    }

    private static func line(_ r: Row, base: Double?) -> String {
        let label = r.name.padding(toLength: 36, withPad: " ", startingAt: 0)
        let ratio = base.map { String(format: "   %.2f x iperf3", r.cpuPerGiB / $0) } ?? ""
        let rate = r.mbps.map { String(format: "(%7.1f MB/s)", $0) } ?? "(computed)    "
        let floor = r.floor.map { String(format: "   %.2f x its floor", r.cpuPerGiB / $0) } ?? ""
        return "cpu       \(label)" + String(format: "%6.3f s/GiB  ", r.cpuPerGiB) + rate + ratio + floor
    }

    private static func json(_ r: Row, base: Double?) -> [String: Any] {
        var o: [String: Any] = ["name": r.name, "cpu_s_per_gib": rounded(r.cpuPerGiB, 3)]
        if let mbps = r.mbps { o["mbps"] = rounded(mbps) }
        if let base { o["ratio_to_iperf3"] = rounded(r.cpuPerGiB / base, 3) }
        if let floor = r.floor { o["ratio_to_floor"] = rounded(r.cpuPerGiB / floor, 3) }
        return o
    }
}
