import Foundation
import PeerLink
import PeerLinkHarness
import PeerLinkCore
import PeerLinkWire

/// `peerlink-bench connect-delay [ONE-WAY-MS [RUNS]]`: time from dial to the first application
/// byte delivered, through the harness's `DelayRelay` on loopback (no netem in these kernels),
/// counted in round trips of the relay's delay. Three ways: raw TCP plus one length-prefixed
/// message (the baseline), a PeerLink link (TCP, Noise XX with the hellos, one frame), and a
/// whole session (the link, the invitation and its answer, one reliable message).
///
/// The relay delays payload only: TCP's own SYN/SYN-ACK between dialler and relay is not
/// delayed, so on a real path each figure gains one more RTT; the output prints both.
enum ConnectDelayBench {
    static let help = """
        usage: peerlink-bench connect-delay [ONE-WAY-MS [RUNS]]
          Dial to first application byte delivered, through a userspace relay on loopback that
          delays every byte ONE-WAY-MS (default 20) each way (RTT = 2 x ONE-WAY-MS); RUNS (default
          10) dials of each kind, median and min printed in ms and in RTTs:
            raw TCP + one message            TCP connect, one length-prefixed message
            raw TCP, 3 legs (XX's shape)     TCP connect, three messages back and forth
            link: TCP + Noise XX + hello     SecureLink handshake, then one frame
            session: + invitation            Node.invite (link + invite + answer), one message
          The relay does not delay TCP's handshake, so a real path adds 1 RTT to each; the
          "real path" column adds it (issue 16's target: link <= 2.5 RTT). The link's time less
          the raw three legs' is PeerLink's own handshake work. Prints a JSON line.
        """

    /// One kind of dial's times, milliseconds.
    struct Row {
        let name: String
        let samples: [Double]
        var median: Double { Percentiles(samples).p50 }
        var min: Double { samples.min() ?? 0 }
    }

    static func run(_ args: [String]) async throws {
        if args.first == "--help" || args.first == "-h" { print(help); return }
        guard let delay = args.isEmpty ? 20 : args.first.flatMap(Int.init), delay > 0,
              let runs = args.count > 1 ? Int(args[1]) : 10, runs > 0 else { print(help); exit(2) }
        let rtt = Double(2 * delay)
        print("PeerLink connect to first application byte through a delaying relay on loopback: \(delay) ms each way (RTT \(Int(rtt)) ms), \(runs) runs")
        let rows = [
            Row(name: "raw TCP + one message", samples: try await repeated(runs) { try await rawDial(delay: delay) }),
            Row(name: "raw TCP, 3 legs (XX's shape)", samples: try await repeated(runs) { try await rawDial(delay: delay, legs: 3) }),
            Row(name: "link: TCP + Noise XX + hello", samples: try await repeated(runs) { try await linkDial(delay: delay) }),
            Row(name: "session: + invitation", samples: try await repeated(runs) { try await sessionDial(delay: delay) }),
        ]
        for r in rows {
            let label = r.name.padding(toLength: 30, withPad: " ", startingAt: 0)
            print("connect   \(label)" + String(format: "median %7.1f ms = %.2f RTT  (min %.1f ms)   real path ≈ %.2f RTT",
                                                  r.median, r.median / rtt, r.min, r.median / rtt + 1))
        }
        // The link's floor is three one-way legs (XX's three messages, the hello riding the
        // third); the raw three-leg row pays the same relay and loopback costs, so the
        // difference is PeerLink's own work.
        let floorExcess = rows[2].median - 3 * Double(delay)
        let processing = rows[2].median - rows[1].median
        print(String(format: "connect   link above its floor of 3 legs (1.5 RTT): +%.1f ms, of which %.1f ms = %.3f RTT is PeerLink's own (link − raw 3 legs); the rest is the relay's",
                     floorExcess, processing, processing / rtt))
        printJSON(["bench": "connect-delay", "one_way_ms": delay, "rtt_ms": rtt, "runs": runs, "relay": "loopback",
                   "link_processing_ms": rounded(processing, 3),
                   "rows": rows.map { ["name": $0.name, "median_ms": rounded($0.median, 2), "min_ms": rounded($0.min, 2),
                                       "median_rtt": rounded($0.median / rtt, 3), "real_path_rtt": rounded($0.median / rtt + 1, 3)] }])
    }

    private static func repeated(_ runs: Int, _ body: () async throws -> Double) async throws -> [Double] {
        var samples: [Double] = []
        for _ in 0..<runs { samples.append(try await body()) }
        return samples
    }

    /// A relay to `targetPort` on loopback delaying each way by `delay` ms.
    private static func relay(to targetPort: UInt16, delay: Int) throws -> DelayRelay {
        try DelayRelay(host: "127.0.0.1", listenPort: 0, targetPort: targetPort, delayMilliseconds: delay)
    }

    private static func endpoint(_ port: UInt16) -> TransportEndpoint {
        TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port)
    }

    private static func milliseconds(since start: UInt64, _ end: UInt64) -> Double { Double(end - start) / 1e6 }

    /// Raw TCP: connect, then `legs` (odd) length-prefixed messages back and forth, each sent
    /// when the one before arrived; the listener notes when the last arrives. Three legs have
    /// the shape of Noise XX with the hello on its third message, without the cryptography.
    private static func rawDial(delay: Int, legs: Int = 1) async throws -> Double {
        let arrived = Arrival()
        let listener = try TCPTransport(bindHost: "127.0.0.1").listen(port: 0) { conn in
            Task {
                for _ in 0..<(legs / 2) {
                    guard (try? await conn.receive()) != nil else { arrived.set(success: false); return }
                    conn.enqueue([2])
                }
                arrived.set(success: (try? await conn.receive()) != nil)
                conn.close()
            }
        }
        defer { listener.close() }
        let relay = try relay(to: listener.port, delay: delay)
        defer { relay.close() }
        let start = DispatchTime.now().uptimeNanoseconds
        let conn = try await TCPTransport().connect(to: endpoint(relay.port), timeout: .seconds(5))
        conn.enqueue([1])
        for _ in 0..<(legs / 2) {
            guard try await conn.receive() != nil else { throw TransportError.closed }
            conn.enqueue([1])
        }
        let end = await arrived.wait()
        conn.close()
        guard let end else { throw TransportError.closed }
        return milliseconds(since: start, end)
    }

    /// A PeerLink link: connect, Noise XX with both hellos, then one frame.
    private static func linkDial(delay: Int) async throws -> Double {
        let arrived = Arrival()
        let server = Identity()
        let hello = Hello(displayName: "bench", sessionToken: [UInt8](repeating: 1, count: 16))
        let listener = try TCPTransport(bindHost: "127.0.0.1").listen(port: 0) { conn in
            Task {
                guard let link = try? await SecureLink.establish(over: conn, initiator: false, identity: server, hello: hello) else {
                    arrived.set(success: false)
                    return
                }
                arrived.set(success: (try? await link.receive()) != nil)
                link.close()
            }
        }
        defer { listener.close() }
        let relay = try relay(to: listener.port, delay: delay)
        defer { relay.close() }
        let start = DispatchTime.now().uptimeNanoseconds
        let conn = try await TCPTransport().connect(to: endpoint(relay.port), timeout: .seconds(5))
        let link = try await SecureLink.establish(over: conn, initiator: true, identity: Identity(), hello: hello, expecting: server.peerID)
        link.send(.unreliable(payload: [1]))
        let end = await arrived.wait()
        link.close()
        guard let end else { throw TransportError.closed }
        return milliseconds(since: start, end)
    }

    /// A whole session: `Node.invite` (link, invitation, answer) then one reliable message.
    private static func sessionDial(delay: Int) async throws -> Double {
        let a = try Node(identity: Identity(), displayName: "delay-a", transports: [TCPTransport(bindHost: "127.0.0.1")], datagrams: false)
        let b = try Node(identity: Identity(), displayName: "delay-b", transports: [TCPTransport(bindHost: "127.0.0.1")], datagrams: false)
        let sa = Session(node: a), sb = Session(node: b)
        let advertiser = Advertiser(node: a, service: try ServiceType("delay"), discovery: MemoryDiscovery())
        try await advertiser.start()
        Task { for await i in advertiser.invitations { i.accept(into: sa) } }
        guard let port = try await a.start()[.tcp] else { throw TransportError.closed }
        let relay = try relay(to: port, delay: delay)
        defer { relay.close() }
        let arrived = Task { () -> UInt64 in
            for await e in sa.events { if case .message = e { return DispatchTime.now().uptimeNanoseconds } }
            return 0
        }
        let info = PeerInfo(peerID: a.peerID, displayName: "delay-a", info: [:], endpoints: [endpoint(relay.port)])
        let start = DispatchTime.now().uptimeNanoseconds
        try await b.invite(info, to: sb, timeout: .seconds(10))
        try await sb.send([1], to: [a.peerID])
        let end = await arrived.value
        await sb.disconnect()
        await a.stop()
        await b.stop()
        guard end > start else { throw TransportError.closed }
        return milliseconds(since: start, end)
    }
}

/// When something first arrived (uptime nanoseconds), or nil when the far end failed first;
/// awaited once.
final class Arrival: @unchecked Sendable {
    private let lock = NSLock()
    private var outcome: UInt64??
    private var waiter: CheckedContinuation<UInt64?, Never>?

    func set(success: Bool) {
        let at: UInt64? = success ? DispatchTime.now().uptimeNanoseconds : nil
        let w: CheckedContinuation<UInt64?, Never>? = lock.withLock {
            guard outcome == nil else { return nil }
            outcome = .some(at)
            defer { waiter = nil }
            return waiter
        }
        w?.resume(returning: at)
    }

    func wait() async -> UInt64? {
        await withCheckedContinuation { c in
            let done: UInt64?? = lock.withLock { if let outcome { return .some(outcome) }; waiter = c; return nil }
            if let done { c.resume(returning: done) }
        }
    }
}
