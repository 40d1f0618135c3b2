import Foundation

/// One iperf3 run on loopback (`iperf3 -s -1` and `iperf3 -c … -J`, two processes): its
/// throughput and the CPU both ends spent, from its JSON report.
struct IPerf3 {
    /// Received MiB per second (the table's "MB/s").
    let mbps: Double
    /// Bytes received and the seconds they took.
    let bytes: Double
    let seconds: Double
    /// CPU use of each end over the run, in percent of one core (user + system).
    let senderCPUPercent: Double
    let receiverCPUPercent: Double

    /// CPU seconds per GiB moved, both ends together.
    var cpuPerGiB: Double { (senderCPUPercent + receiverCPUPercent) / 100 * seconds / (bytes / 1_073_741_824) }

    /// Runs iperf3 for `seconds` s; nil when it is not installed or its report is unreadable.
    static func run(seconds: Int = 3, port: String = "5299") -> IPerf3? {
        let path = "/usr/bin/iperf3"
        guard FileManager.default.isExecutableFile(atPath: path) else { return nil }
        let server = Process()
        server.executableURL = URL(fileURLWithPath: path)
        server.arguments = ["-s", "-1", "-p", port, "-B", "127.0.0.1"]
        server.standardOutput = FileHandle.nullDevice
        try? server.run()
        usleep(300_000)
        let client = Process()
        client.executableURL = URL(fileURLWithPath: path)
        client.arguments = ["-c", "127.0.0.1", "-p", port, "-t", String(seconds), "-J"]
        let pipe = Pipe()
        client.standardOutput = pipe
        guard (try? client.run()) != nil else { server.terminate(); return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        client.waitUntilExit()
        server.terminate()
        return IPerf3(report: data)
    }

    /// Reads `end.sum_received` and `end.cpu_utilization_percent` (host = the client, which
    /// sends; remote = the server, which receives).
    init?(report: Data) {
        guard let json = try? JSONSerialization.jsonObject(with: report) as? [String: Any],
              let end = json["end"] as? [String: Any], let sum = end["sum_received"] as? [String: Any],
              let bps = sum["bits_per_second"] as? Double, let bytes = sum["bytes"] as? Double,
              let seconds = sum["seconds"] as? Double, seconds > 0, bytes > 0,
              let cpu = end["cpu_utilization_percent"] as? [String: Any],
              let host = cpu["host_total"] as? Double, let remote = cpu["remote_total"] as? Double else { return nil }
        mbps = bps / 8 / 1_048_576
        self.bytes = bytes
        self.seconds = seconds
        senderCPUPercent = host
        receiverCPUPercent = remote
    }
}
