import Foundation

/// A file over PeerLink beside what users compare it with, between the same two endpoints
/// (loopback) and in the same rounds: raw TCP (no encryption, no hashing, no file), OpenSSH
/// with its fastest cipher on this machine (`ssh … 'cat > FILE' < FILE`), and iperf3 (measured
/// once by the caller); and the CPU floor of the job (raw TCP + the links' cipher at both ends +
/// SHA-256 at both ends + reading and writing the file, WorkFloor.swift).
struct FileComparison {
    var peerlink: [Double] = []
    var raw: [Double] = []
    var ssh: [Double] = []
    var toRaw: [Double] = []
    var toSSH: [Double] = []
    var cipher: String?
    /// MB/s of one copy with each cipher tried.
    var cipherTrials: [(String, Double)] = []
    var peerlinkCPU = 0.0, sshCPU = 0.0, floorCPU = 0.0
    var iperf3: IPerf3?

    static func median(_ v: [Double]) -> Double { v.isEmpty ? .nan : v.sorted()[v.count / 2] }

    /// Runs raw TCP, then `rounds` times PeerLink's file transfer, an OpenSSH copy of a file
    /// of the same size, and raw TCP again; `bytes` each.
    static func measure(bytes: Int, rounds: Int, iperf3: IPerf3?) async throws -> FileComparison {
        var c = FileComparison()
        c.iperf3 = iperf3
        let dir = NSTemporaryDirectory() + "peerlink-bench-file-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = dir + "/source", target = dir + "/copy"
        _ = FileManager.default.createFile(atPath: source, contents: Data(repeating: 0x33, count: bytes))
        let ssh = OpenSSH.start()
        defer { ssh?.stop() }
        if let ssh {
            for cipher in OpenSSH.candidates {
                if let copy = ssh.copy(source, to: target, cipher: cipher) { c.cipherTrials.append((cipher, mbps(bytes, copy.seconds))) }
            }
            c.cipher = c.cipherTrials.max { $0.1 < $1.1 }?.0
        }
        var rawCPU = 0.0, plCPU = 0.0, sshCPU = 0.0
        func rawRun() async throws -> Double {
            let m = try await measured { _ = try await rawTCP(bytes: bytes) }
            rawCPU += m.cpuSeconds
            return mbps(bytes, m.seconds)
        }
        var before = try await rawRun()
        c.raw.append(before)
        for _ in 0..<max(1, rounds) {
            let m = try await sessionResource(bytes: bytes)
            plCPU += m.cpuSeconds
            let rate = mbps(bytes, m.seconds)
            c.peerlink.append(rate)
            if let ssh, let cipher = c.cipher, let copy = ssh.copy(source, to: target, cipher: cipher) {
                sshCPU += copy.cpuSeconds
                let sshRate = mbps(bytes, copy.seconds)
                c.ssh.append(sshRate)
                c.toSSH.append(rate / sshRate)
            }
            let after = try await rawRun()
            c.raw.append(after)
            c.toRaw.append(rate / ((before + after) / 2))
            before = after
        }
        let gib = Double(bytes) / 1_073_741_824
        c.peerlinkCPU = plCPU / (gib * Double(c.peerlink.count))
        if !c.ssh.isEmpty { c.sshCPU = sshCPU / (gib * Double(c.ssh.count)) }
        c.floorCPU = rawCPU / (gib * Double(c.raw.count)) + (try WorkFloor.cipherSecondsPerGiB(bytes: bytes))
            + WorkFloor.twoHashesSecondsPerGiB(bytes: bytes) + (try WorkFloor.fileCopySecondsPerGiB(bytes: bytes))
        return c
    }

    var lines: [String] {
        func rounds(_ v: [Double]) -> String { v.map { String(format: "%.2f", $0) }.joined(separator: " ") }
        var out: [String] = []
        if !cipherTrials.isEmpty {
            out.append("file      OpenSSH ciphers, one copy each: " + cipherTrials.map { String(format: "%@ %.0f MB/s", $0.0, $0.1) }.joined(separator: ", ")
                       + " -> fastest here: \(cipher ?? "none")")
        }
        out.append(String(format: "file      raw TCP socket (no cipher)        %9.1f MB/s   (median of %d runs beside the rounds)", Self.median(raw), raw.count))
        if let ip = iperf3 { out.append(String(format: "file      iperf3 (3 s)                      %9.1f MB/s", ip.mbps)) }
        if let cipher, !ssh.isEmpty {
            out.append(String(format: "file      OpenSSH, ssh -c %@ 'cat > file' %7.1f MB/s   CPU %.3f s/GiB both ends", cipher, Self.median(ssh), sshCPU))
        } else {
            out.append("file      OpenSSH: not measured (see the message above)")
        }
        out.append(String(format: "file      CPU floor: raw TCP + cipher + SHA-256 both ends + file I/O  %.3f s/GiB", floorCPU))
        var pl = String(format: "peerlink  file (resource, SHA-256)        %9.1f MB/s   ratio to raw TCP %.3f (rounds %@)",
                        Self.median(peerlink), Self.median(toRaw), rounds(toRaw))
        if let ip = iperf3 { pl += String(format: ", to iperf3 %.3f", Self.median(peerlink) / ip.mbps) }
        if !toSSH.isEmpty { pl += String(format: ", to OpenSSH %.3f (rounds %@)", Self.median(toSSH), rounds(toSSH)) }
        out.append(pl)
        var cpu = String(format: "peerlink  file CPU %.3f s/GiB both ends = %.2f x the floor", peerlinkCPU, peerlinkCPU / floorCPU)
        if !ssh.isEmpty { cpu += String(format: ", %.2f x OpenSSH's", peerlinkCPU / sshCPU) }
        out.append(cpu)
        return out
    }

    var json: [String: Any] {
        var o: [String: Any] = [
            "mbps": rounded(Self.median(peerlink)), "raw_mbps": rounded(Self.median(raw)),
            "ratio_to_raw": rounded(Self.median(toRaw), 3), "ratios_to_raw": toRaw.map { rounded($0, 3) },
            "cpu_s_per_gib": rounded(peerlinkCPU, 3), "floor_cpu_s_per_gib": rounded(floorCPU, 3),
            "ratio_to_floor_cpu": rounded(peerlinkCPU / floorCPU, 3),
        ]
        if let ip = iperf3 { o["ratio_to_iperf3"] = rounded(Self.median(peerlink) / ip.mbps, 3) }
        if let cipher, !ssh.isEmpty {
            o["openssh"] = ["cipher": cipher, "mbps": rounded(Self.median(ssh)), "cpu_s_per_gib": rounded(sshCPU, 3),
                            "ciphers_tried": Dictionary(uniqueKeysWithValues: cipherTrials.map { ($0.0, rounded($0.1)) })] as [String: Any]
            o["ratio_to_openssh"] = rounded(Self.median(toSSH), 3)
            o["ratios_to_openssh"] = toSSH.map { rounded($0, 3) }
        }
        return o
    }
}
