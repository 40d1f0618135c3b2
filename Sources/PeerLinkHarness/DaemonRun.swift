import Crypto
import Foundation
import Logging
import PeerLink
import PeerLinkTesting
import PeerLinkDaemon
import PeerLinkStore
import Synchronization

/// Runs a scenario whose nodes are field daemons (`[[node]] daemon = true`) on the in-memory
/// medium, inside the memory backend's simulation: each node a real `FieldDaemon` with its
/// SQLite ledger, inbox and outbox in a per-run temporary folder, its own node, session,
/// advertiser and browser; no API socket, metrics endpoint, systemd or radios. Nodes find
/// each other while a link joins them (`RangeDiscovery`) and the daemons do the rest:
/// invite the peers they hold items for, announce, transfer, record and settle. The run
/// places each `[[item]]` in its holder's outbox at its time and records what the daemons
/// report (queued, received, delivered, expired) at the virtual time they report it.
struct DaemonRun {
    let net = MemoryNetwork()
    var sampleInterval = 25

    /// One daemon of the run and what it needs to be stopped.
    private struct Member {
        let name: String
        let peer: PeerID
        let daemon: FieldDaemon
        let session: Session
        let advertiser: Advertiser
        let browser: Browser
        let outbox: String
    }

    func run(_ scenario: Scenario, lossSeed: UInt64) async throws -> RunRecord {
        let clock = RunClock()
        let log = MarkLog()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-daemons-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (i, l) in scenario.links.enumerated() {
            for n in l.between { net.setConditions(MemoryRunNetwork.conditions(l, seed: i, lossSeed: lossSeed), for: MeshRun.address(n, l)) }
            if l.upAt > 0 { setReachable(l, false) }
        }
        let range = RangeDiscovery(scenario.links)
        let reports = Mutex<[(at: Int, node: String, event: DaemonEvent)]>([])

        var members: [Member] = []
        for spec in scenario.daemons {
            let member = try await start(spec, scenario: scenario, root: root + "/" + spec.name, runRoot: root, discovery: range.view(for: spec.name),
                                         clock: clock, log: log) { e in reports.withLock { $0.append((clock.now, spec.name, e)) } }
            members.append(member)
        }
        let names = Dictionary(uniqueKeysWithValues: members.map { ($0.peer.description, $0.name) })
        clock.start()
        log.add(0, "start", "\(members.count) daemons: \(members.map(\.name).joined(separator: ", "))")

        // Links into and out of range.
        var timeline: [(at: Int, link: Scenario.LinkSpec, action: Scenario.TimedEvent.Action?, loss: Double?)] =
            scenario.links.filter { $0.upAt > 0 }.map { ($0.upAt, $0, nil, nil) }
        for e in scenario.events { if let l = scenario.links.first(where: { $0.name == e.link }) { timeline.append((e.at, l, e.action, e.loss)) } }
        timeline.sort { $0.at < $1.at }
        let links = Task {
            for step in timeline {
                await clock.sleep(until: step.at)
                guard let action = step.action else {
                    setReachable(step.link, true)
                    range.set(step.link.name, up: true)
                    log.add(clock.now, "event", "\(step.link.name) comes into range")
                    continue
                }
                switch action {
                case .cut: for n in step.link.between { net.cut(MeshRun.address(n, step.link)) }
                case .off: setReachable(step.link, false); range.set(step.link.name, up: false)
                case .restore: setReachable(step.link, true); range.set(step.link.name, up: true)
                case .loss:
                    let i = scenario.links.firstIndex(of: step.link) ?? 0
                    for n in step.link.between {
                        net.setConditions(MemoryRunNetwork.conditions(step.link, loss: step.loss, seed: i + 100 * step.at, lossSeed: lossSeed),
                                          for: MeshRun.address(n, step.link))
                    }
                }
                log.add(clock.now, "event", "\(action.rawValue) \(step.link.name)" + (step.loss.map { " \(Int($0 * 100))%" } ?? ""))
            }
        }

        // Items into outboxes.
        let placed = Mutex<[Int: (at: Int, digest: [UInt8])]>([:])
        let placing = Task {
            for (i, item) in scenario.items.enumerated().sorted(by: { ($0.1.at, $0.0) < ($1.1.at, $1.0) }) {
                await clock.sleep(until: item.at)
                guard let holder = members.first(where: { $0.name == item.from }), let peer = members.first(where: { $0.name == item.to }) else { continue }
                let bytes = VirtualTime.randomBytes(item.size)
                do {
                    try Self.place(bytes, named: item.name, in: holder.outbox + "/" + peer.peer.description)
                    placed.withLock { $0[i] = (clock.now, Array(SHA256.hash(data: bytes))) }
                    log.add(clock.now, "item", "\(item.name) (\(item.size) bytes) placed in \(item.from)'s outbox for \(item.to)")
                } catch {
                    log.add(clock.now, "error", "could not place \(item.name): \(error)")
                }
            }
        }

        // Carriers, from the first node of each pair.
        var sampling: [Task<([RunRecord.Span], [RunRecord.Span]), Never>] = []
        for (dialer, listener, pairLinks) in MeshRun.pairs(scenario.links) {
            guard let session = members.first(where: { $0.name == dialer })?.session,
                  let peer = members.first(where: { $0.name == listener })?.peer else { continue }
            sampling.append(RunParts.sampleCarriers(session, peer: peer, clock: clock, duration: scenario.duration,
                                                    intervalMs: sampleInterval) { s in
                pairLinks.first { s.remote == "memory://" + MeshRun.address(listener, $0) }?.name
            })
        }

        await clock.sleep(until: scenario.duration)
        links.cancel()
        placing.cancel()
        var upSpans: [RunRecord.Span] = [], carrierSpans: [RunRecord.Span] = []
        for s in sampling {
            let (u, c) = await s.value
            upSpans += u
            carrierSpans += c
        }
        for m in members {
            let daemon = m.daemon
            if await !finishes(Task { await daemon.stop() }, within: 5) { log.add(clock.now, "error", "\(m.name)'s daemon took over 5 s to stop") }
        }
        let events = reports.withLock { $0 }
        for e in events {
            switch e.event.kind {
            case .peerConnected, .peerLeft:
                let other = e.event.peer.flatMap { names[$0] } ?? "?"
                log.add(e.at, "daemon", "\(e.node): \(other) \(e.event.kind == .peerConnected ? "connected" : "left")")
            default: break
            }
        }
        let items = Self.outcomes(scenario, members: members, events: events, placed: placed.withLock { $0 }, root: root)
        return RunRecord(scenario: scenario.name, backend: "memory", duration: scenario.duration, links: scenario.links.map(\.name),
                         upSpans: upSpans.sorted { ($0.from, $0.link) < ($1.from, $1.link) },
                         carrierSpans: carrierSpans.sorted { ($0.from, $0.link, $0.role ?? "") < ($1.from, $1.link, $1.role ?? "") },
                         events: log.all, streams: [], resources: [], items: items)
    }

    /// Both ends of `link` reachable (in range) or not (connections close).
    private func setReachable(_ link: Scenario.LinkSpec, _ reachable: Bool) {
        for n in link.between {
            let a = MeshRun.address(n, link)
            if reachable { net.restore(a) } else { net.drop(a) }
        }
    }

    /// Starts one daemon on the memory medium, its state in `root`.
    private func start(_ spec: Scenario.DaemonSpec, scenario: Scenario, root: String, runRoot: String, discovery: Discovery, clock: RunClock, log: MarkLog,
                       report: @escaping @Sendable (DaemonEvent) -> Void) async throws -> Member {
        let transports = scenario.links.filter { $0.between.contains(spec.name) }.map {
            MemoryTransport(network: net, address: MeshRun.address(spec.name, $0), emulating: RangeDiscovery.medium(of: $0))
        }
        let node = try Node(identity: InProcessRun.identity(), displayName: spec.name, transports: transports)
        let service = try ServiceType("harness")
        let session = Session(node: node, policy: scenario.linkPolicy)
        let advertiser = Advertiser(node: node, service: service, discovery: discovery)
        let browser = Browser(node: node, service: service, discovery: discovery)
        var c = DaemonConfig()
        c.service = "harness"
        c.name = spec.name
        c.policy = scenario.policy
        c.stateDirectory = root + "/state"
        c.inbox = root + "/inbox"
        c.outbox = root + "/outbox"
        c.accept = .all
        c.keepFree = 0
        c.ttlSeconds = spec.ttl
        let state = c.stateDirectory
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let ledger = try Ledger(location: LedgerLocation(database: state + "/ledger.sqlite", sent: state + "/sent", expired: state + "/expired",
                                                         failed: state + "/failed", inbox: c.inbox),
                                now: FieldDaemon.wallClock())
        let events = DaemonEvents()
        events.observe(report)
        let name = spec.name
        let logger = Logger(label: name) { _ in MarkLogHandler(node: name, root: runRoot, clock: clock, log: log) }
        let daemon = try FieldDaemon(config: c, parts: .init(node: node, session: session, advertiser: advertiser, browser: browser,
                                                             trust: IdentityStore(directory: root + "/config")),
                                     ledger: ledger, log: logger, events: events, naming: .pathInOutbox)
        await daemon.start()
        try await advertiser.start()
        try await browser.start()
        return Member(name: name, peer: node.peerID, daemon: daemon, session: session, advertiser: advertiser, browser: browser,
                      outbox: c.outbox)
    }

    /// Places a file the documented way: written under a hidden name, then renamed.
    static func place(_ bytes: [UInt8], named name: String, in folder: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let temp = folder + "/." + name + ".tmp"
        try Data(bytes).write(to: URL(fileURLWithPath: temp))
        try FileManager.default.moveItem(atPath: temp, toPath: folder + "/" + name)
    }

    /// What became of each item, from the daemons' reports (the run's folder in a reason
    /// written `RUN`); each landed file is hashed.
    private static func outcomes(_ scenario: Scenario, members: [Member], events: [(at: Int, node: String, event: DaemonEvent)],
                                 placed: [Int: (at: Int, digest: [UInt8])], root: String) -> [RunRecord.ItemOutcome] {
        // An item's ID, from its holder's "queued" report (its path names the peer's folder and the file).
        var index: [String: Int] = [:]
        var out = scenario.items.enumerated().map { i, item in
            RunRecord.ItemOutcome(name: item.name, from: item.from, to: item.to, size: item.size, placedAt: placed[i]?.at)
        }
        for e in events where e.event.kind == .itemQueued {
            guard let id = e.event.item, let path = e.event.path, let peer = members.first(where: { $0.name == e.node }) else { continue }
            let folder = ((path as NSString).deletingLastPathComponent as NSString).lastPathComponent
            let file = (path as NSString).lastPathComponent
            let receiver = members.first { $0.peer.description == folder }?.name
            guard let i = scenario.items.firstIndex(where: { $0.from == peer.name && $0.name == file && $0.to == receiver }) else { continue }
            index[id] = i
            out[i].queuedAt = out[i].queuedAt ?? e.at
        }
        for e in events {
            guard let id = e.event.item, let i = index[id] else { continue }
            switch e.event.kind {
            case .itemReceived:
                let digest = e.event.path.flatMap { FileManager.default.contents(atPath: $0) }.map { Array(SHA256.hash(data: $0)) }
                out[i].receptions.append(.init(node: e.node, at: e.at, intact: digest != nil && digest == placed[i]?.digest))
            case .itemDelivered where e.node == scenario.items[i].from: out[i].settledAt = out[i].settledAt ?? e.at
            case .itemExpired where e.node == scenario.items[i].from:
                out[i].expiredAt = e.at
                out[i].reason = e.event.reason?.replacingOccurrences(of: root, with: "RUN")
            case .itemFailed where e.node == scenario.items[i].from:
                out[i].failedAt = e.at
                out[i].reason = e.event.reason?.replacingOccurrences(of: root, with: "RUN")
            default: break
            }
        }
        return out
    }
}

/// A daemon's notices, warnings and errors as marks of the run, the run's temporary folder
/// written `RUN` (the rest is the same in every run of a seed).
struct MarkLogHandler: LogHandler {
    let node: String
    let root: String
    let clock: RunClock
    let log: MarkLog
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .notice

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let details = metadata.merging(event.metadata ?? [:]) { $1 }.sorted { $0.key < $1.key }
            .map { "\($0.key)=\("\($0.value)".replacingOccurrences(of: root, with: "RUN"))" }
        log.add(clock.now, "daemon", "\(node): \(event.message)" + (details.isEmpty ? "" : " (" + details.joined(separator: ", ") + ")"))
    }
}
