import Foundation
import PeerLink
import PeerLinkTesting

/// Where the two nodes of an in-process run talk: builds each side's transports for the
/// scenario's links, says where the receiver listens, and carries out the timeline's events.
/// The memory backend emulates links; the Bluetooth-lab backend uses real radios and sockets.
protocol RunNetwork: Sendable {
    /// The transports of one side (`sender` dials, `receiver` listens), one per link.
    func transports(receiver: Bool, links: [Scenario.LinkSpec]) throws -> [Transport]
    /// Where the receiver listens for `link`, given the ports its node bound per medium.
    func endpoint(of link: Scenario.LinkSpec, ports: [Medium: UInt16]) -> TransportEndpoint
    /// The scenario link a session link snapshot belongs to (by its medium and remote).
    func link(of snapshot: LinkSnapshot, in links: [Scenario.LinkSpec]) -> String?
    /// Makes a link unreachable (before it appears) or reachable (when it appears).
    func setReachable(_ link: Scenario.LinkSpec, _ reachable: Bool) async throws
    /// Carries out a timeline event on `link`.
    func apply(_ event: Scenario.TimedEvent, to link: Scenario.LinkSpec, index: Int) async throws
    /// Undoes everything the run changed (called once, also after a failure).
    func tearDown() async
    /// What this network does not reproduce of `scenario` (shown in the report).
    func notes(_ scenario: Scenario) -> [String]
    /// Waits until the run's connections are really gone (after both nodes stopped).
    func settle() async
    /// The negotiated media of one side (wifi-direct links).
    func upgraders(receiver: Bool) -> [LinkUpgrader]
}

extension RunNetwork {
    func upgraders(receiver: Bool) -> [LinkUpgrader] { [] }
    func notes(_ scenario: Scenario) -> [String] { [] }
    func settle() async {}
}

/// Runs a scenario between two real PeerLink nodes in this process (sender and receiver) over
/// a `RunNetwork`: invitation, traffic, timeline, carrier sampling, and the record.
struct InProcessRun {
    let backend: String
    let network: RunNetwork
    /// How often the carriers are sampled (ms).
    var sampleInterval = 25

    func run(_ scenario: Scenario) async throws -> RunRecord {
        guard scenario.nodes.count == 2 else {
            throw HarnessError.unsupported(backend: backend, reason: "it runs two nodes; this scenario has \(scenario.nodes.count) (the memory backend runs more)")
        }
        guard Self.sendsOneWay(scenario) else {
            throw HarnessError.unsupported(backend: backend, reason: "its traffic goes from the first node to the second only (the memory backend runs both ways)")
        }
        do {
            let record = try await runSteps(scenario)
            await network.tearDown()
            return record
        } catch {
            await network.tearDown()
            throw error
        }
    }

    /// Whether all of `scenario`'s traffic goes from its first node to its second.
    static func sendsOneWay(_ scenario: Scenario) -> Bool {
        scenario.traffic.allSatisfy { $0.from == scenario.nodes[0] && $0.to == scenario.nodes[1] }
    }

    /// A node's key: from the simulation's seeded numbers when one runs (so that peer IDs, and
    /// the tie-breaks they decide, are the same on every run of a seed).
    static func identity() -> Identity {
        guard VirtualTime.isRunning, let id = try? Identity(privateKeyBytes: VirtualTime.randomBytes(32)) else { return Identity() }
        return id
    }

    private func runSteps(_ scenario: Scenario) async throws -> RunRecord {
        let network = self.network
        let trace = RunTrace(scenario.name)
        let dialled = scenario.links.filter { $0.kind != .wifiDirect }
        let a = try Node(identity: Self.identity(), displayName: "sender", transports: try network.transports(receiver: false, links: dialled),
                         upgraders: network.upgraders(receiver: false))
        let b = try Node(identity: Self.identity(), displayName: "receiver", transports: try network.transports(receiver: true, links: dialled),
                         upgraders: network.upgraders(receiver: true))
        let policy = scenario.linkPolicy
        let sa = Session(node: a, policy: policy), sb = Session(node: b, policy: policy)
        let advertiser = Advertiser(node: b, service: try ServiceType("harness"), discovery: MemoryDiscovery())
        try await advertiser.start()
        let ports = try await b.start()
        let acceptor = Task { for await i in advertiser.invitations { i.accept(into: sb) } }
        defer { acceptor.cancel() }
        trace("receiver listening: \(ports)")

        let clock = RunClock()
        let log = MarkLog()
        for n in network.notes(scenario) { log.add(0, "note", n) }
        func endpoint(_ l: Scenario.LinkSpec) -> TransportEndpoint { network.endpoint(of: l, ports: ports) }
        // Links that appear later are out of reach until then.
        for l in dialled where l.upAt > 0 { try await network.setReachable(l, false) }
        let initial = dialled.filter { $0.upAt == 0 }
        let info = PeerInfo(peerID: b.peerID, displayName: "receiver", info: [:], endpoints: initial.map(endpoint))
        // The receiver: messages and resources as they arrive.
        let receiver = Receiver(streams: scenario.traffic.filter { $0.kind == .messages }.count, clock: clock)
        let inbox = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-harness-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: inbox) }
        let receiving = RunParts.receive(sb, into: receiver, inbox: inbox)
        // The sender's own events: carrier changes with reasons.
        let watching = Task {
            for await e in sa.events {
                if case let .carrierChanged(_, link, role, reason) = e {
                    log.add(clock.now, "carrier", "\(role.rawValue) → link \(link): \(reason)")
                }
                if case let .linkUpgrade(_, u) = e {
                    log.add(clock.now, "upgrade", "\(u.medium) \(u.step.rawValue) (+\(Int(u.sinceLastStep / .milliseconds(1))) ms)" + (u.detail.isEmpty ? "" : ": \(u.detail)"))
                }
            }
        }

        trace("inviting \(info.endpoints)")
        try await a.invite(info, to: sa, timeout: .seconds(30))
        clock.start()
        trace("invited")
        log.add(clock.now, "start", "invited over \(initial.map(\.name).joined(separator: ", "))")

        // Carrier sampling.
        let links = scenario.links
        let sampling = RunParts.sampleCarriers(sa, clock: clock, duration: scenario.duration, intervalMs: sampleInterval) { s in
            network.link(of: s, in: links)
        }

        // The timeline of events.
        let timeline = Task {
            for e in scenario.events {
                await clock.sleep(until: e.at)
                guard let i = scenario.links.firstIndex(where: { $0.name == e.link }) else { continue }
                let what = "\(e.action.rawValue) \(e.link)" + (e.loss.map { " \(Int($0 * 100))%" } ?? "")
                let began = clock.now
                do {
                    try await network.apply(e, to: scenario.links[i], index: i)
                    log.add(began, "event", what)
                    // Real networks take time to change (commands in an emulated VM): say so.
                    if clock.now - began > 50 { log.add(clock.now, "note", "\(what) took effect after \(clock.now - began) ms") }
                } catch {
                    log.add(clock.now, "error", "\(what) failed: \(error)")
                }
            }
        }
        let appearing = Task {
            var endpoints = initial.map(endpoint)
            for l in dialled.filter({ $0.upAt > 0 }).sorted(by: { $0.upAt < $1.upAt }) {
                await clock.sleep(until: l.upAt)
                do { try await network.setReachable(l, true) } catch { log.add(clock.now, "error", "\(l.name) could not appear: \(error)") }
                endpoints.append(endpoint(l))
                await sa.update(PeerInfo(peerID: b.peerID, displayName: "receiver", info: [:], endpoints: endpoints))
                log.add(clock.now, "event", "\(l.name) appears")
            }
        }

        // Traffic.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-harness-src-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let traffic = try RunParts.send(scenario, over: sa, to: b.peerID, clock: clock, dir: dir) { log.add(clock.now, "error", $0) }
        let senders = traffic.tasks
        // Traffic still being sent at the scenario's end (a stalled link) is cut short there and
        // shows as missing; the run never waits past its duration plus a few seconds.
        let finished = Task { for s in senders { await s.value } }
        await clock.sleep(until: scenario.duration)
        trace("duration reached")
        if await !finishes(finished, within: 5) {
            log.add(clock.now, "error", "traffic still being sent at the end of the run; stopped")
            for s in senders { s.cancel() }
        }
        timeline.cancel()
        appearing.cancel()
        let (upSpans, carrierSpans) = await sampling.value
        trace("sampling done; leaving")
        if await !finishes(Task { await sa.disconnect() }, within: 5) { log.add(clock.now, "error", "the sender's graceful leave took over 5 s") }
        if await !finishes(Task { await sb.disconnect() }, within: 5) { log.add(clock.now, "error", "the receiver's leave took over 5 s") }
        receiving.cancel()
        watching.cancel()
        await advertiser.stop()
        // Close every socket of the run, so the next run starts from a quiet network (the
        // emulated radio mixes up links when old ones linger).
        await a.stop()
        await b.stop()
        await network.settle()
        trace("stopped")

        var streams = receiver.streams()
        for i in streams.indices {
            (streams[i].sent, streams[i].failedSends) = traffic.tally.counts(i)
        }
        let resources = receiver.resources(expected: traffic.resourceSizes)
        return RunRecord(scenario: scenario.name, backend: backend, duration: scenario.duration, links: scenario.links.map(\.name),
                         upSpans: upSpans, carrierSpans: carrierSpans, events: log.all, streams: streams, resources: resources)
    }
}

/// Progress lines on stderr when `PEERLINK_HARNESS_TRACE=1` (to find where a lab run hangs).
struct RunTrace {
    let name: String
    let on = ProcessInfo.processInfo.environment["PEERLINK_HARNESS_TRACE"] == "1"
    let start = Date()
    init(_ name: String) { self.name = name }
    func callAsFunction(_ text: @autoclosure () -> String) {
        guard on else { return }
        FileHandle.standardError.write(Data(String(format: "[trace %@ %.2f s] %@\n", name, Date().timeIntervalSince(start), text()).utf8))
    }
}

/// Whether `task` ends within `seconds` (it keeps running otherwise). Unstructured on
/// purpose: waiting for a task's value cannot be cancelled, so a child task could not give up.
func finishes(_ task: Task<Void, Never>, within seconds: Double) async -> Bool {
    await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
        let once = OnceResume(c)
        Task { await task.value; once.resume(true) }
        Task {
            try? await VirtualTime.sleep(for: .nanoseconds(Int64(seconds * 1e9)))
            once.resume(false)
        }
    }
}

/// Resumes a continuation once; later calls do nothing.
final class OnceResume: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Bool, Never>?
    init(_ c: CheckedContinuation<Bool, Never>) { continuation = c }
    func resume(_ v: Bool) {
        let c: CheckedContinuation<Bool, Never>? = lock.withLock { defer { continuation = nil }; return continuation }
        c?.resume(returning: v)
    }
}

/// Messages each stream sent and failed to send so far.
final class SendTally: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [(sent: Int, failed: Int)]
    init(streams: Int) { counts = Array(repeating: (0, 0), count: streams) }
    var streamCount: Int { lock.withLock { counts.count } }
    func sent(_ i: Int) { lock.withLock { counts[i].sent += 1 } }
    func failed(_ i: Int) { lock.withLock { counts[i].failed += 1 } }
    func counts(_ i: Int) -> (Int, Int) { lock.withLock { i < counts.count ? (counts[i].sent, counts[i].failed) : (0, 0) } }
}

/// Milliseconds since the run started.
/// Scenario time: 0 until `start()` (called once the first link is up, so that a slow link
/// set-up on real radios does not eat into the timeline), milliseconds since then.
final class RunClock: @unchecked Sendable {
    private let lock = NSLock()
    private var origin: UInt64?

    /// A clock that starts at `start()`.
    init() {}
    /// A clock already started at `start` (monotonic nanoseconds; several processes of one run
    /// share it — the IP-lab backend).
    init(start: UInt64) { origin = start }

    func start() { lock.withLock { if origin == nil { origin = Self.nanoseconds() } } }
    var now: Int {
        guard let o = lock.withLock({ origin }) else { return 0 }
        return Int((Int64(truncatingIfNeeded: Self.nanoseconds()) - Int64(truncatingIfNeeded: o)) / 1_000_000)
    }
    func sleep(until ms: Int) async {
        let wait = ms - now
        if wait > 0 { try? await VirtualTime.sleep(for: .milliseconds(wait)) }
    }
    /// PeerLink's clock (virtual in a simulated run, monotonic since boot outside) in nanoseconds.
    static func nanoseconds() -> UInt64 {
        let (seconds, attoseconds) = VirtualTime.now.components
        return UInt64(clamping: seconds) &* 1_000_000_000 &+ UInt64(clamping: attoseconds / 1_000_000_000)
    }
}

/// Scenario events and carrier changes, with their times.
final class MarkLog: @unchecked Sendable {
    private let lock = NSLock()
    private var marks: [RunRecord.Mark] = []
    func add(_ at: Int, _ kind: String, _ text: String) { lock.withLock { marks.append(RunRecord.Mark(at: at, kind: kind, text: text)) } }
    var all: [RunRecord.Mark] { lock.withLock { marks.sorted { $0.at < $1.at } } }
}

/// What the receiving node got.
final class Receiver: @unchecked Sendable {
    private let lock = NSLock()
    private var arrivals: [[Int]]
    private var times: [[Int]]
    private var done: [RunRecord.ResourceOutcome] = []
    private let clock: RunClock

    init(streams: Int, clock: RunClock) {
        arrivals = Array(repeating: [], count: streams)
        times = Array(repeating: [], count: streams)
        self.clock = clock
    }

    /// A message: 4 bytes stream index, 4 bytes sequence number, padding to `size`.
    static func payload(stream: UInt32, seq: UInt32, size: Int) -> [UInt8] {
        var p = [UInt8](repeating: 0x5a, count: max(8, size))
        for i in 0..<4 { p[i] = UInt8(truncatingIfNeeded: stream >> (24 - 8 * i)); p[4 + i] = UInt8(truncatingIfNeeded: seq >> (24 - 8 * i)) }
        return p
    }

    func message(_ bytes: [UInt8]) {
        guard bytes.count >= 8 else { return }
        let stream = bytes[0..<4].reduce(0) { $0 << 8 | Int($1) }
        let seq = bytes[4..<8].reduce(0) { $0 << 8 | Int($1) }
        let t = clock.now
        lock.withLock {
            guard stream < arrivals.count else { return }
            arrivals[stream].append(seq)
            times[stream].append(t)
        }
    }

    func resource(size: Int, verified: Bool, resumedFrom: UInt64, error: String?) {
        let t = clock.now
        lock.withLock { done.append(RunRecord.ResourceOutcome(size: size, verified: verified, restarted: resumedFrom > 0, error: error, finishedAt: t)) }
    }

    func streams() -> [RunRecord.MessageStream] {
        lock.withLock { zip(arrivals, times).map { RunRecord.MessageStream(sent: 0, failedSends: 0, arrivals: $0, arrivalTimes: $1) } }
    }

    func resources(expected sizes: [Int]) -> [RunRecord.ResourceOutcome] {
        lock.withLock {
            var out = done
            var missing = sizes
            for d in done { if let i = missing.firstIndex(of: d.size) { missing.remove(at: i) } }
            for s in missing { out.append(RunRecord.ResourceOutcome(size: s, verified: false, restarted: false, error: "did not arrive", finishedAt: nil)) }
            return out
        }
    }
}
