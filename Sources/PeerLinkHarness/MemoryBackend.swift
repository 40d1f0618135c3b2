import Foundation
import PeerLink

/// Runs a scenario somewhere and records what happened.
public protocol ScenarioBackend: Sendable {
    var name: String { get }
    func run(_ scenario: Scenario) async throws -> RunRecord
}

/// Runs scenarios between two real PeerLink nodes in this process over the in-memory medium:
/// each `[[link]]` is a pair of `MemoryTransport`s emulating Bluetooth (RFCOMM) or Wi-Fi (TCP)
/// with the scenario's bandwidth, delay and loss. Everything above the transport (Noise,
/// sessions, link manager, link policy) is the production code. Deterministic apart from
/// scheduling: loss decisions are seeded.
public struct MemoryBackend: ScenarioBackend {
    public let name = "memory"
    /// How often the carriers are sampled (ms).
    public var sampleInterval = 25

    public init() {}

    public func run(_ scenario: Scenario) async throws -> RunRecord {
        let net = MemoryNetwork()
        func medium(_ l: Scenario.LinkSpec) -> Medium { l.kind == .bluetooth ? .rfcomm : .tcp }
        func conditions(_ l: Scenario.LinkSpec, loss: Double? = nil, seed: Int) -> MemoryLinkConditions {
            MemoryLinkConditions(bandwidth: l.bandwidth, delay: Double(l.delay) / 1000, loss: loss ?? l.loss, seed: UInt64(seed + 1))
        }
        for (i, l) in scenario.links.enumerated() { net.setConditions(conditions(l, seed: i), for: "b-\(l.name)") }
        let a = try Node(identity: Identity(), displayName: "sender", transports: scenario.links.map {
            MemoryTransport(network: net, address: "a-\($0.name)", emulating: medium($0))
        })
        let b = try Node(identity: Identity(), displayName: "receiver", transports: scenario.links.map {
            MemoryTransport(network: net, address: "b-\($0.name)", emulating: medium($0))
        })
        let policy = LinkPolicy(scenario.policy)
        let sa = Session(node: a, policy: policy), sb = Session(node: b, policy: policy)
        let advertiser = Advertiser(node: b, service: try ServiceType("harness"), discovery: MemoryDiscovery())
        try await advertiser.start()
        let acceptor = Task { for await i in advertiser.invitations { i.accept(into: sb) } }
        defer { acceptor.cancel() }

        let clock = RunClock()
        let log = MarkLog()
        func endpoint(_ l: Scenario.LinkSpec) -> TransportEndpoint { TransportEndpoint(medium: medium(l), host: "b-\(l.name)", port: 0) }
        // Links that appear later are out of reach until then.
        for l in scenario.links where l.upAt > 0 { net.drop("b-\(l.name)") }
        let initial = scenario.links.filter { $0.upAt == 0 }
        let info = PeerInfo(peerID: b.peerID, displayName: "receiver", info: [:], endpoints: initial.map(endpoint))

        // The receiver: messages and resources as they arrive.
        let receiver = Receiver(streams: scenario.traffic.filter { $0.kind == .messages }.count, clock: clock)
        let inbox = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-harness-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: inbox) }
        let receiving = Task {
            for await e in sb.events {
                switch e {
                case let .message(_, bytes, .reliable): receiver.message(bytes)
                case let .resourceOffered(offer): try? await sb.accept(offer, into: inbox)
                case let .resourceFinished(p, path, error) where p.direction == .receiving:
                    receiver.resource(size: Int(p.total), verified: path != nil && error == nil, resumedFrom: p.resumedFrom, error: error)
                default: break
                }
            }
        }
        // The sender's own events: carrier changes with reasons.
        let watching = Task {
            for await e in sa.events {
                if case let .carrierChanged(_, link, role, reason) = e {
                    log.add(clock.now, "carrier", "\(role.rawValue) → link \(link): \(reason)")
                }
            }
        }

        try await a.invite(info, to: sa, timeout: 10)
        log.add(clock.now, "start", "invited over \(initial.map(\.name).joined(separator: ", "))")

        // Carrier sampling.
        let names = Dictionary(uniqueKeysWithValues: scenario.links.map { ("memory://b-\($0.name)", $0.name) })
        let interval = sampleInterval
        let sampling = Task { () -> ([RunRecord.Span], [RunRecord.Span]) in
            var up = SpanBuilder(), carriers = SpanBuilder()
            while !Task.isCancelled, clock.now < scenario.duration {
                let t = clock.now
                let snapshot = await sa.links().first?.links ?? []
                up.sample(Set(snapshot.compactMap { s in names[s.remote].map { SpanBuilder.Pair(link: $0, role: nil) } }), at: t)
                carriers.sample(Set(snapshot.flatMap { s in
                    (names[s.remote].map { n in s.carries.filter { $0 != LinkRole.control.rawValue }.map { SpanBuilder.Pair(link: n, role: $0) } }) ?? []
                }), at: t)
                try? await Task.sleep(nanoseconds: UInt64(interval) * 1_000_000)
            }
            let end = clock.now
            return (up.close(at: end), carriers.close(at: end))
        }

        // The timeline of events.
        let timeline = Task {
            for e in scenario.events {
                await clock.sleep(until: e.at)
                guard let l = scenario.links.first(where: { $0.name == e.link }) else { continue }
                let address = "b-\(l.name)"
                switch e.action {
                case .cut: net.cut(address)
                case .off: net.drop(address)
                case .restore: net.restore(address)
                case .loss:
                    let i = scenario.links.firstIndex(of: l) ?? 0
                    net.setConditions(conditions(l, loss: e.loss, seed: i + 100 * e.at), for: address)
                }
                log.add(clock.now, "event", "\(e.action.rawValue) \(e.link)" + (e.loss.map { " \(Int($0 * 100))%" } ?? ""))
            }
        }
        let appearing = Task {
            var endpoints = initial.map(endpoint)
            for l in scenario.links.filter({ $0.upAt > 0 }).sorted(by: { $0.upAt < $1.upAt }) {
                await clock.sleep(until: l.upAt)
                net.restore("b-\(l.name)")
                endpoints.append(endpoint(l))
                await sa.update(PeerInfo(peerID: b.peerID, displayName: "receiver", info: [:], endpoints: endpoints))
                log.add(clock.now, "event", "\(l.name) appears")
            }
        }

        // Traffic.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-harness-src-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var senders: [Task<RunRecord.MessageStream?, Never>] = []
        var resourceSizes: [Int] = []
        var streamIndex = 0
        for t in scenario.traffic {
            switch t.kind {
            case .messages:
                let index = UInt32(streamIndex)
                streamIndex += 1
                senders.append(Task {
                    await clock.sleep(until: t.start)
                    var failed = 0
                    let spacing = t.rate > 0 ? 1000.0 / Double(t.rate) : 0
                    for seq in 0..<t.count {
                        if spacing > 0 { await clock.sleep(until: t.start + Int(Double(seq) * spacing)) }
                        do {
                            try await sa.send(Receiver.payload(stream: index, seq: UInt32(seq), size: t.size), to: [b.peerID])
                        } catch {
                            failed += 1
                        }
                    }
                    return RunRecord.MessageStream(sent: t.count - failed, failedSends: failed, arrivals: [], arrivalTimes: [])
                })
            case .resource:
                resourceSizes.append(t.size)
                let path = dir + "/resource-\(resourceSizes.count).bin"
                var bytes = [UInt8](repeating: 0, count: t.size)
                var x: UInt32 = 2463534242
                for i in bytes.indices { x ^= x << 13; x ^= x >> 17; x ^= x << 5; bytes[i] = UInt8(truncatingIfNeeded: x) }
                FileManager.default.createFile(atPath: path, contents: Data(bytes))
                senders.append(Task {
                    await clock.sleep(until: t.start)
                    do { try await sa.sendResource(at: path, to: b.peerID) } catch { log.add(clock.now, "error", "resource: \(error)") }
                    return nil
                })
            }
        }
        var sentStreams: [RunRecord.MessageStream] = []
        for s in senders { if let r = await s.value { sentStreams.append(r) } }
        // Let the tail arrive, then stop at the scenario's end.
        await clock.sleep(until: scenario.duration)
        timeline.cancel()
        appearing.cancel()
        let (upSpans, carrierSpans) = await sampling.value
        await sa.disconnect()
        receiving.cancel()
        watching.cancel()
        await advertiser.stop()

        var streams = receiver.streams()
        for i in streams.indices where i < sentStreams.count {
            streams[i].sent = sentStreams[i].sent
            streams[i].failedSends = sentStreams[i].failedSends
        }
        let resources = receiver.resources(expected: resourceSizes)
        return RunRecord(scenario: scenario.name, backend: name, duration: scenario.duration, links: scenario.links.map(\.name),
                         upSpans: upSpans, carrierSpans: carrierSpans, events: log.all, streams: streams, resources: resources)
    }
}

/// Milliseconds since the run started.
final class RunClock: Sendable {
    private let start: UInt64
    /// - Parameter start: the run's time zero (monotonic nanoseconds); now by default.
    init(start: UInt64 = DispatchTime.now().uptimeNanoseconds) { self.start = start }
    var now: Int { Int((Int64(truncatingIfNeeded: DispatchTime.now().uptimeNanoseconds) - Int64(truncatingIfNeeded: start)) / 1_000_000) }
    func sleep(until ms: Int) async {
        let wait = ms - now
        if wait > 0 { try? await Task.sleep(nanoseconds: UInt64(wait) * 1_000_000) }
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
