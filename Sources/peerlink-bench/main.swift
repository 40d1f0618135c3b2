// peerlink-bench: loopback figures for PeerLink, each printed as a ratio to a baseline
// measured in the same run (a raw TCP socket, and iperf3 when installed). Not a test: it
// checks nothing, it measures.
//
//   swift run -c release peerlink-bench [MEGABYTES]   (default 64)
import CPeerLinkSys
import Foundation
import PeerLink
#if canImport(Glibc)
import Glibc
#endif

let megabytes = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 64
let totalBytes = megabytes * 1024 * 1024
peerlink_line_buffer_stdout()

func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let t = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9
}

func mbps(_ bytes: Int, _ s: Double) -> Double { Double(bytes) / s / 1_048_576 }

/// Raw TCP on loopback: one connection, 64 KiB writes, the reader counts bytes.
func rawTCP(bytes: Int) async throws -> Double {
    let received = OneShotDouble()
    let listener = try TCPTransport(bindHost: "127.0.0.1").listen(port: 0) { conn in
        guard let c = conn as? FDConnection else { return }
        Thread {
            var buf = [UInt8](repeating: 0, count: 1 << 16)
            var got = 0
            while got < bytes {
                let n = buf.withUnsafeMutableBytes { recv(c.rawDescriptor, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                got += n
            }
            received.set()
        }.start()
    }
    defer { listener.close() }
    let conn = try await TCPTransport().connect(to: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: listener.port), timeout: 5)
    guard let c = conn as? FDConnection else { return 0 }
    let chunk = [UInt8](repeating: 0x42, count: 1 << 16)
    return try await seconds {
        var sent = 0
        while sent < bytes {
            let n = chunk.withUnsafeBytes { send(c.rawDescriptor, $0.baseAddress, min($0.count, bytes - sent), Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw TransportError.closed }
            sent += n
        }
        await received.wait()
    }
}

/// iperf3 on loopback for 3 s, in MB/s; nil when iperf3 is not installed.
func iperf3() -> Double? {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/iperf3") else { return nil }
    let port = "5299"
    let server = Process()
    server.executableURL = URL(fileURLWithPath: "/usr/bin/iperf3")
    server.arguments = ["-s", "-1", "-p", port, "-B", "127.0.0.1"]
    server.standardOutput = FileHandle.nullDevice
    try? server.run()
    usleep(300_000)
    let client = Process()
    client.executableURL = URL(fileURLWithPath: "/usr/bin/iperf3")
    client.arguments = ["-c", "127.0.0.1", "-p", port, "-t", "3", "-J"]
    let pipe = Pipe()
    client.standardOutput = pipe
    guard (try? client.run()) != nil else { server.terminate(); return nil }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    client.waitUntilExit()
    server.terminate()
    guard let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
          let end = json["end"] as? [String: Any], let sum = end["sum_received"] as? [String: Any],
          let bps = sum["bits_per_second"] as? Double else { return nil }
    return bps / 8 / 1_048_576
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
    try await b.invite(info, to: sb, timeout: 5)
    return (sa, sb, a.peerID)
}

func sessionMessages(bytes: Int) async throws -> Double {
    let (sa, sb, peerA) = try await sessionPair()
    let size = 64 * 1024
    let count = bytes / size
    let done = Task { () -> Int in
        var got = 0
        for await e in sa.events { if case let .message(_, m, _) = e { got += m.count; if got >= count * size { break } } }
        return got
    }
    let message = [UInt8](repeating: 0x5a, count: size)
    let t = try await seconds {
        for _ in 0..<count { try await sb.send(message, to: [peerA]) }
        _ = await done.value
    }
    await sb.disconnect()
    return t
}

func sessionResource(bytes: Int) async throws -> Double {
    let (sa, sb, peerA) = try await sessionPair()
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-bench-\(UUID())").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    FileManager.default.createFile(atPath: dir + "/blob", contents: Data(repeating: 0x33, count: bytes))
    Task { for await e in sa.events { if case let .resourceOffered(o) = e { try? await sa.accept(o, into: dir + "/in") } } }
    let t = try await seconds { try await sb.sendResource(at: dir + "/blob", to: peerA) }
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
        for _ in 0..<n { try await TCPTransport().connect(to: endpoint, timeout: 5).close() }
    }
    let noise = try await seconds {
        for _ in 0..<n {
            let c = try await TCPTransport().connect(to: endpoint, timeout: 5)
            try await SecureLink.establish(over: c, initiator: true, identity: me, hello: hello, expecting: a.peerID).close()
        }
    }
    return (raw / Double(n), noise / Double(n))
}

print("PeerLink loopback benchmark, \(megabytes) MiB per transfer, \(ProcessInfo.processInfo.activeProcessorCount) cores")
let rawSeconds = try await rawTCP(bytes: totalBytes)
let raw = mbps(totalBytes, rawSeconds)
print(String(format: "baseline  raw TCP socket          %9.1f MB/s", raw))
if let ip = iperf3() { print(String(format: "baseline  iperf3 (3 s)            %9.1f MB/s   (raw/iperf3 = %.2f)", ip, raw / ip)) }
let msg = mbps(totalBytes, try await sessionMessages(bytes: totalBytes))
print(String(format: "peerlink  reliable 64 KiB messages %9.1f MB/s   ratio to raw %.3f", msg, msg / raw))
let res = mbps(totalBytes, try await sessionResource(bytes: totalBytes))
print(String(format: "peerlink  resource (file, SHA-256) %9.1f MB/s   ratio to raw %.3f", res, res / raw))
let hs = try await handshakes(n: 50)
print(String(format: "connect   raw TCP                  %9.3f ms", hs.raw * 1000))
print(String(format: "connect   TCP + Noise XX + hello   %9.3f ms   ratio to raw %.1f", hs.noise * 1000, hs.noise / hs.raw))

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
