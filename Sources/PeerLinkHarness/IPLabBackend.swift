import Foundation
import PeerLink
import PeerLinkBluetooth
import PeerLinkWiFiDirect
#if canImport(Glibc)
import Glibc
#endif

/// Runs scenarios between two PeerLink nodes in two network namespaces over kernel TCP: a veth
/// pair per `[[link]]`, `ip link set down` for `off`, nftables ingress drops for `cut` and
/// `loss`, `tc tbf` for bandwidth. Each node is an agent process (`peerlink-harness agent`)
/// under `ip netns exec`; this process (the coordinator) applies the events and assembles the
/// record. Needs root. Bluetooth links are IP paths whose connections report RFCOMM (noted in
/// every record); a link's one-way delay is added by a userspace relay in the listener's
/// namespace (DelayRelay), since this kernel has no netem.
public struct IPLabBackend: ScenarioBackend {
    public let name = "iplab"
    /// The `peerlink-harness` executable the agents run.
    public var executable: String
    /// The port every node listens on, on each of its link addresses.
    public var port: UInt16 = 47000

    public init(executable: String) { self.executable = executable }

    public func run(_ scenario: Scenario) async throws -> RunRecord {
        if scenario.links.contains(where: { $0.kind == .wifiDirect }) {
            throw HarnessError.unsupported(backend: "iplab", reason: "wifi-direct links are negotiated on radios; use --backend memory (or the Wi-Fi lab)")
        }
        guard getuid() == 0 else {
            throw AgentError("the iplab backend needs root (network namespaces, veth, nftables, tc); run it as root or use --backend memory")
        }
        let topo = IPLabTopology(scenario: scenario, tag: Int(getpid()))
        let lab = IPLabCleanup.shared
        lab.begin(teardown: topo.teardownCommands)
        defer { lab.end() }
        for c in topo.setupCommands { try IPLabShell.run(c) }

        var faults = Dictionary(uniqueKeysWithValues: topo.links.map { ($0.name, IPLabTopology.Faults()) })
        func apply(_ link: IPLabTopology.Link, _ new: IPLabTopology.Faults) throws {
            for c in topo.commands(for: link, from: faults[link.name] ?? .init(), to: new) { try IPLabShell.run(c) }
            faults[link.name] = new
        }
        for (spec, l) in zip(scenario.links, topo.links) {
            if spec.upAt > 0 { try apply(l, IPLabTopology.Faults(down: true)) }
            if spec.loss > 0 { try apply(l, (faults[l.name] ?? .init()).applying(.loss, loss: spec.loss)) }
        }

        let dialer = try AgentProcess(executable: executable, namespace: topo.nsA, role: "dialer")
        let listener = try AgentProcess(executable: executable, namespace: topo.nsB, role: "listener")
        lab.track(dialer.pid); lab.track(listener.pid)
        defer { dialer.stop(); listener.stop() }

        func setups(_ addr: KeyPath<IPLabTopology.Link, String>) -> [AgentProtocol.LinkSetup] {
            topo.links.map { .init(name: $0.name, kind: $0.kind, local: $0[keyPath: addr], subnetPrefix: $0.subnetPrefix) }
        }
        try listener.send(.setup(scenario: scenario, links: setups(\.addressB), port: port))
        guard let peer = try await listener.ready(within: 20) else { throw AgentError("listener did not get ready") }
        try dialer.send(.setup(scenario: scenario, links: setups(\.addressA), port: port))
        _ = try await dialer.ready(within: 20)

        func endpoint(_ l: IPLabTopology.Link) -> TransportEndpoint {
            let delayed = (scenario.links.first { $0.name == l.name }?.delay ?? 0) > 0
            return TransportEndpoint(medium: l.kind == .bluetooth ? .rfcomm : .tcp, host: l.addressB,
                                     port: delayed ? AgentProtocol.relayPort(for: port) : port)
        }
        let initial = zip(scenario.links, topo.links).filter { $0.0.upAt == 0 }.map { endpoint($0.1) }
        let later = zip(scenario.links, topo.links).filter { $0.0.upAt > 0 }.map { AgentProtocol.LaterEndpoint(at: $0.0.upAt, link: $0.1.name, endpoint: endpoint($0.1)) }
        let t0 = DispatchTime.now().uptimeNanoseconds
        let clock = RunClock(start: t0)
        var marks = notes(scenario)
        try listener.send(.go(t0: t0, peer: nil, endpoints: [], later: []))
        try dialer.send(.go(t0: t0, peer: peer, endpoints: initial, later: later))

        // The timeline: links appearing and scenario events, in time order.
        var timeline: [(at: Int, link: String, action: Scenario.TimedEvent.Action, loss: Double?, appear: Bool)] =
            scenario.events.map { ($0.at, $0.link, $0.action, $0.loss, false) }
        timeline += scenario.links.filter { $0.upAt > 0 }.map { ($0.upAt, $0.name, .restore, nil, true) }
        timeline.sort { $0.at < $1.at }
        for e in timeline {
            await clock.sleep(until: e.at)
            try dialer.check(); try listener.check()
            guard let l = topo.link(e.link) else { continue }
            let at = clock.now
            try apply(l, (faults[l.name] ?? .init()).applying(e.action, loss: e.loss))
            if !e.appear {
                marks.append(.init(at: at, kind: "event", text: "\(e.action.rawValue) \(e.link)" + (e.loss.map { " \(Int($0 * 100))%" } ?? "")))
            }
        }
        await clock.sleep(until: scenario.duration)
        try dialer.send(.finish)
        guard let sent = try await dialer.result(within: 30) else { throw AgentError("the dialler sent no result") }
        try listener.send(.finish)
        guard let got = try await listener.result(within: 30) else { throw AgentError("the listener sent no result") }
        marks += dialer.marks

        var streams = got.received
        for i in streams.indices where i < sent.sent.count {
            streams[i].sent = sent.sent[i].sent
            streams[i].failedSends = sent.sent[i].failedSends
        }
        return RunRecord(scenario: scenario.name, backend: name, duration: scenario.duration, links: scenario.links.map(\.name),
                         upSpans: sent.upSpans, carrierSpans: sent.carrierSpans, events: marks.sorted { $0.at < $1.at },
                         streams: streams, resources: got.resources)
    }

    /// What this backend does not reproduce, said in every record.
    func notes(_ scenario: Scenario) -> [RunRecord.Mark] {
        var n: [RunRecord.Mark] = []
        for l in scenario.links where l.kind == .bluetooth {
            n.append(.init(at: 0, kind: "note", text: "Bluetooth link \(l.name) EMULATED by an IP path (veth + kernel TCP reported as RFCOMM); no radio in this backend"))
        }
        let delayed = scenario.links.filter { $0.delay > 0 }
        if !delayed.isEmpty {
            n.append(.init(at: 0, kind: "note", text: "delay added by a userspace relay in the receiver's namespace (no netem here): " +
                           delayed.map { "\($0.name) \($0.delay) ms" }.joined(separator: ", ") +
                           " each way on PeerLink's bytes; TCP's own ACKs between sender and relay are not delayed"))
        }
        return n
    }
}

/// Runs lab commands (argv, no shell).
enum IPLabShell {
    static func run(_ argv: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = argv
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        if p.terminationStatus != 0 {
            let why = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw AgentError("`\(argv.joined(separator: " "))` failed (\(p.terminationStatus)): \(why)")
        }
    }
}

/// Tears the lab down when a run ends, and on SIGINT/SIGTERM (then exits 130/143).
final class IPLabCleanup: @unchecked Sendable {
    static let shared = IPLabCleanup()
    private let lock = NSLock()
    private var teardown: [[String]] = []
    private var pids: [Int32] = []
    private var sources: [DispatchSourceSignal] = []

    private init() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            s.setEventHandler { [weak self] in
                self?.end()
                exit(128 + sig)
            }
            s.resume()
            sources.append(s)
        }
    }

    func begin(teardown t: [[String]]) { lock.withLock { teardown = t; pids = [] } }
    func track(_ pid: Int32) { lock.withLock { pids.append(pid) } }

    /// Kills the agents, deletes the namespaces (their veths, qdiscs and tables go with them).
    func end() {
        let (t, p) = lock.withLock { () -> ([[String]], [Int32]) in
            defer { teardown = []; pids = [] }
            return (teardown, pids)
        }
        for pid in p { kill(pid, SIGKILL) }
        for c in t { try? IPLabShell.run(c) }
    }
}

/// An agent child process and what it reported.
final class AgentProcess: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()
    private var splitter = LineSplitter()
    private var peer: PeerID?
    private var finalResult: AgentProtocol.Result?
    private var failure: String?
    private var eof = false
    private var collected: [RunRecord.Mark] = []
    let role: String

    init(executable: String, namespace: String, role: String) throws {
        self.role = role
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ip", "netns", "exec", namespace, executable, "agent", "--role", role]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        // A thread of its own reads the agent's lines until EOF (blocking reads: Foundation's
        // readabilityHandler lost the tail of a long last line here).
        let reading = output.fileHandleForReading
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(reading.fileDescriptor, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                self.take(buffer[0..<n])
            }
            self.lock.withLock { self.eof = true }
        }
    }

    private func take(_ bytes: ArraySlice<UInt8>) {
        lock.withLock {
            for line in splitter.feed(bytes) where !line.isEmpty {
                do {
                    switch try AgentProtocol.decode(AgentProtocol.Report.self, from: line) {
                    case let .ready(p): peer = p
                    case let .mark(m): collected.append(m)
                    case let .result(r): finalResult = r
                    case let .failed(why): failure = why
                    }
                } catch {
                    failure = "\(error)"
                }
            }
        }
    }

    var pid: Int32 { process.processIdentifier }
    var marks: [RunRecord.Mark] { lock.withLock { collected } }

    func send(_ c: AgentProtocol.Command) throws {
        try check()
        input.fileHandleForWriting.write(Data((try AgentProtocol.encode(c) + "\n").utf8))
    }

    /// Throws when the agent failed or exited early.
    func check() throws {
        if let f = lock.withLock({ failure }) { throw AgentError("\(role) agent: \(f)") }
        // Once it exited and its last lines were read (they may be long: the listener's result).
        if !process.isRunning && lock.withLock({ eof && finalResult == nil }) {
            throw AgentError("\(role) agent exited (status \(process.terminationStatus)) before its result")
        }
    }

    func ready(within seconds: Double) async throws -> PeerID? { try await wait(seconds) { $0.peer } }
    func result(within seconds: Double) async throws -> AgentProtocol.Result? { try await wait(seconds) { $0.finalResult } }

    private func wait<T>(_ seconds: Double, _ get: (AgentProcess) -> T?) async throws -> T? {
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        while DispatchTime.now().uptimeNanoseconds < end {
            if let v = lock.withLock({ get(self) }) { return v }
            try check()
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return nil
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
