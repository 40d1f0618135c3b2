// peerlink-bench: PeerLink throughput, latency and CPU, each figure printed beside a baseline
// measured in the same run. Not a test: it checks nothing, it measures. `peerlink-bench --help`
// lists the modes (Usage.swift); docs/PERFORMANCE.md records the figures and commands.
import CPeerLinkSys
import Foundation
import PeerLink
import PeerLinkBluetooth
#if canImport(Glibc)
import Glibc
import PeerLinkCore
import PeerLinkWire
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let megabytes = arguments.first.flatMap(Int.init) ?? 64
let totalBytes = megabytes * 1024 * 1024
peerlink_line_buffer_stdout()
HeapTuning.keepFreedHeap()  // as the CLI does (docs/PERFORMANCE.md: heap trimming)

func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let t = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9
}

func mbps(_ bytes: Int, _ s: Double) -> Double { Double(bytes) / s / 1_048_576 }

/// A connection's descriptor switched back to blocking calls, for a baseline that uses it
/// directly (PeerLink's connections are non-blocking and served by its I/O loop; the
/// connection itself must not be used afterwards).
func blockingDescriptor(_ c: FDConnection) -> Int32 {
    let fd = c.rawDescriptor
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    return fd
}

/// Seconds for `write` to push `bytes` bytes through a raw loopback TCP connection whose far
/// end only counts them (no framing, no encryption): the baselines.
func rawTCPSeconds(bytes: Int, write: @escaping (Int32) throws -> Void) async throws -> Double {
    let received = OneShotDouble()
    let listener = try TCPTransport(bindHost: "127.0.0.1").listen(port: 0) { conn in
        guard let c = conn as? FDConnection else { return }
        let fd = blockingDescriptor(c)
        Thread {
            var buf = [UInt8](repeating: 0, count: 1 << 16)
            var got = 0
            while got < bytes {
                let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                got += n
            }
            withExtendedLifetime(c) {}  // the connection owns the descriptor
            received.set()
        }.start()
    }
    defer { listener.close() }
    let conn = try await TCPTransport().connect(to: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: listener.port), timeout: .seconds(5))
    guard let c = conn as? FDConnection else { return 0 }
    return try await seconds {
        try write(blockingDescriptor(c))
        await received.wait()
    }
}

/// Sends all of `bytes` on `fd`, in as many calls as the kernel needs.
func sendAll(_ fd: Int32, _ bytes: [UInt8], limit: Int? = nil) throws {
    let total = limit ?? bytes.count
    var off = 0
    while off < total {
        let n = bytes.withUnsafeBytes { raw -> Int in
            guard let base = raw.baseAddress else { return -1 }
            return send(fd, base + off, total - off, Int32(MSG_NOSIGNAL))
        }
        if n <= 0 { throw TransportError.closed }
        off += n
    }
}

/// Raw TCP on loopback: one connection, 64 KiB writes, the reader counts bytes.
func rawTCP(bytes: Int) async throws -> Double {
    let chunk = [UInt8](repeating: 0x42, count: 1 << 16)
    return try await rawTCPSeconds(bytes: bytes) { fd in
        var sent = 0
        while sent < bytes {
            let n = min(chunk.count, bytes - sent)
            try sendAll(fd, chunk, limit: n)
            sent += n
        }
    }
}

/// Two PeerLink nodes on loopback TCP with a session between them.
func sessionPair() async throws -> (Session, Session, PeerID) {
    let a = try Node(identity: Identity(), displayName: "bench-a", transports: [TCPTransport(bindHost: "127.0.0.1")])
    let b = try Node(identity: Identity(), displayName: "bench-b", transports: [TCPTransport(bindHost: "127.0.0.1")])
    let sa = Session(node: a), sb = Session(node: b)
    let adv = Advertiser(node: a, service: try ServiceType("bench"), discovery: MemoryDiscovery())
    try await adv.start()
    Task { for await i in adv.invitations { i.accept(into: sa) } }
    guard let port = try await a.start()[.tcp] else { throw TransportError.closed }
    let info = PeerInfo(peerID: a.peerID, displayName: "bench-a", info: [:], endpoints: [TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port)])
    try await b.invite(info, to: sb, timeout: .seconds(5))
    return (sa, sb, a.peerID)
}

/// Time (and CPU, both ends) for `count` reliable messages of `size` bytes, sent as fast as
/// `send` returns, to reach the receiver.
func sessionMessages(count: Int, size: Int) async throws -> Measured {
    let (sa, sb, peerA) = try await sessionPair()
    let done = Task { () -> Int in
        var got = 0
        for await e in sa.events { if case .message = e { got += 1; if got >= count { break } } }
        return got
    }
    let message = [UInt8](repeating: 0x5a, count: size)
    let t = try await measured {
        for _ in 0..<count { try await sb.send(message, to: [peerA]) }
        _ = await done.value
    }
    await sb.disconnect()
    return t
}

/// The baseline for small messages: raw TCP on loopback, one `send` per 2-byte-length-prefixed
/// message of `size` bytes, no encryption or acknowledgements; messages per second.
func rawSmallMessages(count: Int, size: Int) async throws -> Double {
    let message = [UInt8(size >> 8), UInt8(size & 0xff)] + [UInt8](repeating: 0x42, count: size)
    let t = try await rawTCPSeconds(bytes: count * message.count) { fd in
        for _ in 0..<count { try sendAll(fd, message) }
    }
    return Double(count) / t
}

/// Time (and CPU, both ends) to send a file of `bytes` bytes, from the offer to the
/// receiver's verified copy; writing the source file is not counted.
func sessionResource(bytes: Int) async throws -> Measured {
    let (sa, sb, peerA) = try await sessionPair()
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-bench-\(UUID())").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    _ = FileManager.default.createFile(atPath: dir + "/blob", contents: Data(repeating: 0x33, count: bytes))
    Task { for await e in sa.events { if case let .resourceOffered(o) = e { try? await sa.accept(o, into: dir + "/in") } } }
    let t = try await measured { try await sb.sendResource(at: dir + "/blob", to: peerA) }
    await sb.disconnect()
    return t
}

/// Mean time of `n` sequential connects, raw and with the Noise handshake.
func handshakes(n: Int) async throws -> (raw: Double, noise: Double) {
    let a = try Node(identity: Identity(), displayName: "hs", transports: [TCPTransport(bindHost: "127.0.0.1")])
    guard let port = try await a.start()[.tcp] else { throw TransportError.closed }
    let endpoint = TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port)
    let me = Identity()
    let hello = Hello(displayName: "bench", sessionToken: [UInt8](repeating: 1, count: 16))
    let raw = try await seconds {
        for _ in 0..<n { try await TCPTransport().connect(to: endpoint, timeout: .seconds(5)).close() }
    }
    let noise = try await seconds {
        for _ in 0..<n {
            let c = try await TCPTransport().connect(to: endpoint, timeout: .seconds(5))
            try await SecureLink.establish(over: c, initiator: true, identity: me, hello: hello, expecting: a.peerID).close()
        }
    }
    return (raw / Double(n), noise / Double(n))
}

/// A line of /proc/self/status ("Threads", "VmRSS") as a number (kB for sizes).
func processStatus(_ key: String) -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
        return Int(line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? 0
    }
    return 0
}

/// One listening node and `peers` dialling nodes, each with a session to it, then idle: the
/// process's thread count and resident memory before and after.
func idleSessions(peers: Int) async throws {
    let threads0 = processStatus("Threads"), rss0 = processStatus("VmRSS")
    let a = try Node(identity: Identity(), displayName: "idle-a", transports: [TCPTransport(bindHost: "127.0.0.1")])
    let sa = Session(node: a)
    let adv = Advertiser(node: a, service: try ServiceType("idle"), discovery: MemoryDiscovery())
    try await adv.start()
    Task { for await i in adv.invitations { i.accept(into: sa) } }
    guard let port = try await a.start()[.tcp] else { throw TransportError.closed }
    let info = PeerInfo(peerID: a.peerID, displayName: "idle-a", info: [:], endpoints: [TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port)])
    let threads1 = processStatus("Threads"), rss1 = processStatus("VmRSS")
    var sessions: [Session] = []
    for i in 0..<peers {
        let b = try Node(identity: Identity(), displayName: "idle-\(i)", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let sb = Session(node: b)
        try await b.invite(info, to: sb, timeout: .seconds(10))
        sessions.append(sb)
    }
    try await Task.sleep(for: .seconds(2))  // let connection set-up threads finish
    let threads2 = processStatus("Threads"), rss2 = processStatus("VmRSS")
    print("idle      process at start            \(threads0) threads  \(rss0 / 1024) MiB resident")
    print("idle      one listening node          \(threads1) threads  \(rss1 / 1024) MiB resident")
    print("idle      + \(peers) sessions (\(2 * peers) conns)  \(threads2) threads  \(rss2 / 1024) MiB resident"
          + String(format: "   (+%d threads, +%.1f MiB)", threads2 - threads1, Double(rss2 - rss1) / 1024))
    // CPU the idle sessions cost (both ends are in this process: 2 x PEERS session ends, each
    // sending keepalives at the default interval).
    let seconds = 10.0
    let cpu0 = processCPUSeconds()
    try await Task.sleep(for: .seconds(seconds))
    let cpu = processCPUSeconds() - cpu0
    print(String(format: "idle      CPU over %.0f s with %d sessions (%d session ends): %.3f s = %.2f %% of a core (keepalive every %d ms)",
                 seconds, peers, 2 * peers, cpu, 100 * cpu / seconds, Int(SessionConfig().keepaliveInterval.wholeMilliseconds)))
    for s in sessions { await s.disconnect() }
}

if let mode = arguments.first, mode == "--help" || mode == "-h" || mode == "help" {
    print(usage)
    exit(0)
}
if let mode = arguments.first, Int(mode) == nil, !knownModes.contains(mode) {
    print(usage)
    exit(2)
}
// Modes that are one call each; the longer ones follow inline.
let modeArguments = Array(arguments.dropFirst())
var oneCallMode = true
switch arguments.first {
case "rtt": try await RoundTripBench.run(modeArguments)
case "cpu": try await CPUBench.run(modeArguments)
case "connect-delay": try await ConnectDelayBench.run(modeArguments)
case "idle": try await idleSessions(peers: modeArguments.first.flatMap(Int.init) ?? 64)
case "handover-recv": try await HandoverBench.receive(modeArguments)
case "handover-send": try await HandoverBench.send(modeArguments)
case "bluetooth": try await bluetoothBenchmark(modeArguments)
default: oneCallMode = false
}
if oneCallMode { exit(0) }
if arguments.first == "bluetooth-one" {
    // peerlink-bench bluetooth-one rfcomm|l2cap TX RX [MIB]: one session run, prints its MB/s
    // (Hardware/bt-lab/paired-bench.sh measures it between baseline runs).
    let a = Array(arguments.dropFirst())
    guard a.count >= 3, a[0] == "rfcomm" || a[0] == "l2cap" else {
        print("usage: peerlink-bench bluetooth-one rfcomm|l2cap TX-ADDRESS RX-ADDRESS [MIB]")
        exit(2)
    }
    let bytes = (a.count > 3 ? Int(a[3]) ?? 2 : 2) * 1024 * 1024
    let rfcomm = a[0] == "rfcomm"
    let run = try await bluetoothSession(listener: rfcomm ? RFCOMMTransport(adapterAddress: a[2]) : L2CAPTransport(adapterAddress: a[2]),
                                          dialler: rfcomm ? RFCOMMTransport(adapterAddress: a[1]) : L2CAPTransport(adapterAddress: a[1]),
                                          medium: rfcomm ? .rfcomm : .l2cap, remote: a[2], bytes: bytes,
                                          fragment: SessionConfig().fragmentSize)
    // The CPU line first: paired-bench.sh takes the last line as the MB/s figure.
    print(String(format: "cpu_ms_per_mib %.1f", run.cpuPerMiB * 1000))
    print(String(format: "%.3f", run.mbps))
    exit(0)
}
if arguments.first == "messages" {
    // Small reliable messages alone: COUNT messages of 100 bytes, against raw TCP sending one
    // message per send and 64 per writev, in the same rounds.
    let count = arguments.dropFirst().first.flatMap(Int.init) ?? 200_000
    let pairs = try await SmallMessagePairs.measure(rounds: 3, count: count, size: 100)
    for line in pairs.lines { print(line) }
    exit(0)
}
if arguments.first == "file" {
    // peerlink-bench file [MEGABYTES]: the file comparison alone (raw TCP, iperf3, OpenSSH, floor).
    let mib = arguments.dropFirst().first.flatMap(Int.init) ?? 256
    print("PeerLink file transfer against raw TCP, iperf3 and OpenSSH on loopback, \(mib) MiB, \(ProcessInfo.processInfo.activeProcessorCount) cores")
    let file = try await FileComparison.measure(bytes: mib << 20, rounds: 3, iperf3: IPerf3.run())
    for line in file.lines { print(line) }
    printJSON(["bench": "file", "megabytes": mib, "file": file.json])
    exit(0)
}
if arguments.first == "big-messages" {
    // peerlink-bench big-messages [MEGABYTES]: only the reliable 64 KiB messages (for profiling them).
    let mib = arguments.dropFirst().first.flatMap(Int.init) ?? 64
    let count = mib * 16
    let r = mbps(count * 65536, try await sessionMessages(count: count, size: 65536).seconds)
    print(String(format: "peerlink  reliable 64 KiB messages %9.1f MB/s", r))
    exit(0)
}
if arguments.first == "resource" {
    // peerlink-bench resource [MEGABYTES]: only the file transfer (for profiling it).
    let mib = arguments.dropFirst().first.flatMap(Int.init) ?? 64
    let r = mbps(mib << 20, try await sessionResource(bytes: mib << 20).seconds)
    print(String(format: "peerlink  resource (file, SHA-256) %9.1f MB/s", r))
    exit(0)
}
print("PeerLink loopback benchmark, \(megabytes) MiB per transfer, \(ProcessInfo.processInfo.activeProcessorCount) cores")
// Raw TCP beside every PeerLink run (PairedRatio): the host's loopback speed drifts.
let rounds = 3
let msgPair = try await PairedRatio.measure(rounds: rounds, bytes: totalBytes / 65536 * 65536) {
    try await sessionMessages(count: totalBytes / 65536, size: 65536)
}
let raw = msgPair.raw.sorted()[msgPair.raw.count / 2]
print(String(format: "baseline  raw TCP socket          %9.1f MB/s   (median of %d runs beside the PeerLink runs)", raw, msgPair.raw.count))
let ip = IPerf3.run()
if let ip { print(String(format: "baseline  iperf3 (3 s)            %9.1f MB/s   (raw/iperf3 = %.2f)", ip.mbps, raw / ip.mbps)) }
let msg = msgPair.medianMBps
print(String(format: "peerlink  reliable 64 KiB messages %9.1f MB/s   ", msg) + msgPair.text)
let file = try await FileComparison.measure(bytes: totalBytes, rounds: rounds, iperf3: ip)
for line in file.lines { print(line) }
let small = try await SmallMessagePairs.measure(rounds: rounds, count: 50_000, size: 100)
for line in small.lines { print(line) }
let hs = try await handshakes(n: 50)
print(String(format: "connect   raw TCP                  %9.3f ms", hs.raw * 1000))
print(String(format: "connect   TCP + Noise XX + hello   %9.3f ms   ratio to raw %.1f", hs.noise * 1000, hs.noise / hs.raw))
// CPU per GiB from the transfers above (both ends in this process), beside iperf3's.
let cpuRaw = msgPair.rawCPUPerGiB, cpuMsg = msgPair.cpuPerGiB, cpuRes = file.peerlinkCPU
func cpuRatio(_ v: Double) -> String { ip.map { String(format: "   %.2f x iperf3", v / $0.cpuPerGiB) } ?? "" }
if let ip { print(String(format: "cpu       iperf3, both processes   %9.3f s/GiB", ip.cpuPerGiB)) }
print(String(format: "cpu       raw TCP socket           %9.3f s/GiB", cpuRaw) + cpuRatio(cpuRaw))
print(String(format: "cpu       reliable 64 KiB messages %9.3f s/GiB", cpuMsg) + cpuRatio(cpuMsg))
print(String(format: "cpu       resource (file, SHA-256) %9.3f s/GiB", cpuRes) + cpuRatio(cpuRes))
let rtt = try await RoundTripBench.measure(count: 2000)
for r in rtt { print(r.line) }
var summary: [String: Any] = [
    "bench": "loopback", "megabytes": megabytes, "cores": ProcessInfo.processInfo.activeProcessorCount,
    "raw_mbps": rounded(raw), "messages_64k_mbps": rounded(msg), "messages_64k_ratio": rounded(msgPair.median, 3),
    "file": file.json, "messages_64k_rounds": msgPair.json, "small_messages": small.json,
    "connect_raw_ms": rounded(hs.raw * 1000, 3), "connect_noise_ms": rounded(hs.noise * 1000, 3),
    "cpu_s_per_gib": ["raw": rounded(cpuRaw, 3), "messages_64k": rounded(cpuMsg, 3), "resource": rounded(cpuRes, 3)],
    "rtt": rtt.map(\.json),
]
if let ip {
    summary["iperf3_mbps"] = rounded(ip.mbps)
    summary["iperf3_cpu_s_per_gib"] = rounded(ip.cpuPerGiB, 3)
}
printJSON(summary)

/// A flag awaited once.
final class OneShotDouble: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    private var waiter: CheckedContinuation<Void, Never>?
    func set() {
        let w: CheckedContinuation<Void, Never>? = lock.withLock { done = true; defer { waiter = nil }; return waiter }
        w?.resume()
    }
    func wait() async {
        await withCheckedContinuation { c in
            let now: Bool = lock.withLock { if done { return true }; waiter = c; return false }
            if now { c.resume() }
        }
    }
}

/// Session throughput between two nodes over a Bluetooth transport, in MB/s (10^6 bytes/s,
/// as baseline.sh reports), timed at the receiver from the first to the last byte; and the
/// CPU seconds (both nodes: this process) per MiB from the first send to the last arrival.
func bluetoothSession(listener: Transport, dialler: Transport, medium: Medium, remote: String,
                      bytes: Int, fragment: Int) async throws -> (mbps: Double, cpuPerMiB: Double) {
    var config = SessionConfig()
    config.fragmentSize = fragment
    let a = try Node(identity: Identity(), displayName: "bench-rx", transports: [listener])
    let b = try Node(identity: Identity(), displayName: "bench-tx", transports: [dialler])
    let sa = Session(node: a, config: config), sb = Session(node: b, config: config)
    let adv = Advertiser(node: a, service: try ServiceType("bench-bt"), discovery: MemoryDiscovery())
    try await adv.start()
    Task { for await i in adv.invitations { i.accept(into: sa) } }
    guard let port = try await a.start()[medium] else { throw TransportError.closed }
    let info = PeerInfo(peerID: a.peerID, displayName: "bench-rx", info: [:], endpoints: [TransportEndpoint(medium: medium, host: remote, port: port)])
    try await b.invite(info, to: sb, timeout: .seconds(30))
    let size = 32 * 1024
    let count = max(1, bytes / size)
    let done = Task { () -> Double in
        var got = 0
        var start: UInt64 = 0
        for await e in sa.events {
            if case let .message(_, m, _) = e {
                if start == 0 { start = DispatchTime.now().uptimeNanoseconds }
                got += m.count
                if got >= count * size { break }
            }
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }
    let message = [UInt8](repeating: 0x5a, count: size)
    let cpu0 = processCPUSeconds()
    for _ in 0..<count { try await sb.send(message, to: [a.peerID]) }
    let seconds = await done.value
    let cpu = processCPUSeconds() - cpu0
    await sb.disconnect()
    await a.stop()
    // The first message's bytes arrived before the clock started.
    return (Double((count - 1) * size) / seconds / 1e6, cpu / (Double(count * size) / 1_048_576))
}

func bluetoothBenchmark(_ args: [String]) async throws {
    guard args.count >= 3 else {
        print("usage: peerlink-bench bluetooth TX-ADDRESS RX-ADDRESS BASELINE-FILE [MIB [L2CAP-FRAGMENT,...]]")
        exit(2)
    }
    let (tx, rx, baselineFile) = (args[0], args[1], args[2])
    let bytes = (args.count > 3 ? Int(args[3]) ?? 2 : 2) * 1024 * 1024
    var medians: [String: Double] = [:]
    for line in ((try? String(contentsOfFile: baselineFile, encoding: .utf8)) ?? "").split(separator: "\n") {
        let parts = line.split(separator: " ")
        if parts.count == 2, parts[0].hasSuffix("-median"), let v = Double(parts[1]) { medians[String(parts[0].dropLast(7))] = v }
    }
    func report(_ name: String, _ run: (mbps: Double, cpuPerMiB: Double), baseline: String) {
        let label = name.padding(toLength: 34, withPad: " ", startingAt: 0)
        let cpu = String(format: "   CPU %.1f ms/MiB", run.cpuPerMiB * 1000)
        if let base = medians[baseline], base > 0 {
            print("peerlink  \(label)" + String(format: " %7.3f MB/s   ", run.mbps) + baseline + String(format: " %7.3f MB/s   ratio %.2f", base, run.mbps / base) + cpu)
        } else {
            print("peerlink  \(label)" + String(format: " %7.3f MB/s   ", run.mbps) + "(no \(baseline) baseline in this boot)" + cpu)
        }
    }
    print("PeerLink Bluetooth benchmark in the lab: \(bytes / 1_048_576) MiB per run, \(tx) -> \(rx)")
    do {
        let r = try await bluetoothSession(listener: RFCOMMTransport(adapterAddress: rx), dialler: RFCOMMTransport(adapterAddress: tx),
                                           medium: .rfcomm, remote: rx, bytes: bytes, fragment: 16 * 1024)
        report("session over RFCOMM", r, baseline: "rctest-rfcomm")
    } catch {
        print("peerlink  session over RFCOMM: failed: \(error)")
    }
    // L2CAP: the session's default fragment size (SessionConfig, 16 KiB); the link sends each
    // frame in pieces of its hello's max frame (L2CAPConnection.preferredMaxFrame: 4 KiB on
    // ERTM, PROTOCOL §6.3); other sizes (comma-separated 5th argument) are measured for comparison.
    let sizes = args.count > 4 ? args[4].split(separator: ",").compactMap { Int($0) } : [SessionConfig().fragmentSize]
    for fragment in sizes {
        do {
            let l = try await bluetoothSession(listener: L2CAPTransport(adapterAddress: rx), dialler: L2CAPTransport(adapterAddress: tx),
                                               medium: .l2cap, remote: rx, bytes: bytes, fragment: fragment)
            report("session over L2CAP ERTM, cfg \(fragment) B", l, baseline: "l2test-bredr-basic")
            for other in ["l2cap-bredr-ertm", "l2cap-bredr-ertm-4k"] where medians[other] != nil {
                report("  (same, against ERTM)", l, baseline: other)
            }
        } catch {
            print("peerlink  session over L2CAP, \(fragment) B fragments: failed: \(error)")
        }
    }
}
