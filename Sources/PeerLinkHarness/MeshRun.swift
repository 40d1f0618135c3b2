import Foundation
import PeerLink
import PeerLinkTesting

/// Runs a scenario of more than two nodes on the in-memory medium (inside the memory
/// backend's simulation): every node a real PeerLink node with one session, every `[[link]]`
/// a pair of memory transports between the two nodes it joins, links that appear and go on
/// the timeline (a laptop walking past field nodes). The first node of each pair's links
/// invites the other as soon as one of their links is up, and tells its session of the
/// pair's other links as they appear. Message and resource traffic flows between any two
/// nodes a link joins; what arrives is recorded as in a two-node run, and carriers are
/// sampled from each pair's inviting side.
struct MeshRun {
    let net = MemoryNetwork()
    var sampleInterval = 25

    /// A node's memory address on `link`.
    static func address(_ node: String, _ link: Scenario.LinkSpec) -> String { "\(node)@\(link.name)" }

    /// The link a snapshot seen from the inviting side belongs to (its remote is the listener's address).
    static func link(of snapshot: LinkSnapshot, in links: [Scenario.LinkSpec]) -> String? {
        links.first { snapshot.remote == "memory://" + address($0.between[1], $0) }?.name
    }

    func run(_ scenario: Scenario, lossSeed: UInt64) async throws -> RunRecord {
        let trace = RunTrace(scenario.name)
        let clock = RunClock()
        let log = MarkLog()
        for (i, l) in scenario.links.enumerated() {
            net.setConditions(MemoryRunNetwork.conditions(l, seed: i, lossSeed: lossSeed), for: Self.address(l.between[1], l))
        }
        // The nodes, each listening on its side of every link it is part of.
        var builtNodes: [String: Node] = [:], builtSessions: [String: Session] = [:], advertisers: [Advertiser] = []
        for name in scenario.nodes {
            let transports = scenario.links.filter { $0.between.contains(name) }.map {
                MemoryTransport(network: net, address: Self.address(name, $0), emulating: MemoryRunNetwork.medium($0))
            }
            let node = try Node(identity: InProcessRun.identity(), displayName: name, transports: transports)
            let session = Session(node: node, policy: scenario.linkPolicy)
            let advertiser = Advertiser(node: node, service: try ServiceType("harness"), discovery: MemoryDiscovery())
            try await advertiser.start()
            builtNodes[name] = node
            builtSessions[name] = session
            advertisers.append(advertiser)
        }
        let nodes = builtNodes, sessions = builtSessions
        let acceptors = zip(advertisers, scenario.nodes).map { advertiser, name in
            Task { [session = sessions[name]] in for await i in advertiser.invitations { if let session { i.accept(into: session) } } }
        }
        defer { for a in acceptors { a.cancel() } }
        for l in scenario.links where l.upAt > 0 { net.drop(Self.address(l.between[1], l)) }

        // Arrivals at every node go to one receiver: each message names its stream.
        let messageTraffic = scenario.traffic.filter { $0.kind == .messages }
        let receiver = Receiver(streams: messageTraffic.count, clock: clock)
        let inbox = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-mesh-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: inbox) }
        var background: [Task<Void, Never>] = []
        for name in scenario.nodes {
            guard let session = sessions[name] else { continue }
            // One reader per session: each event is read once.
            background.append(RunParts.receive(session, into: receiver, inbox: inbox + "/" + name) { e in
                if case let .carrierChanged(peer, link, role, reason) = e {
                    log.add(clock.now, "carrier", "\(name)→\(Self.name(of: peer, in: nodes)): \(role.rawValue) → link \(link): \(reason)")
                }
            })
        }
        clock.start()
        log.add(0, "start", "\(scenario.nodes.count) nodes: \(scenario.nodes.joined(separator: ", "))")

        // Each pair: invite when a first link is up, then add the pair's later links.
        let pairs = Self.pairs(scenario.links)
        var connecting: [Task<Void, Never>] = []
        for (dialer, listener, links) in pairs {
            guard let session = sessions[dialer], let node = nodes[dialer], let peer = nodes[listener]?.peerID else { continue }
            connecting.append(Task {
                var up: [Scenario.LinkSpec] = []
                var invited = false
                for l in links.sorted(by: { $0.upAt < $1.upAt }) {
                    await clock.sleep(until: l.upAt)
                    if l.upAt > 0 { net.restore(Self.address(listener, l)); log.add(clock.now, "event", "\(l.name) appears") }
                    up.append(l)
                    let info = PeerInfo(peerID: peer, displayName: listener, info: [:], endpoints: up.map {
                        TransportEndpoint(medium: MemoryRunNetwork.medium($0), host: Self.address(listener, $0), port: 0)
                    })
                    if invited { await session.update(info); continue }
                    while !Task.isCancelled, clock.now < scenario.duration {
                        do {
                            try await node.invite(info, to: session, timeout: .seconds(10))
                            invited = true
                            log.add(clock.now, "event", "\(dialer) invited \(listener) over \(l.name)")
                            break
                        } catch {
                            log.add(clock.now, "note", "\(dialer) could not invite \(listener) yet: \(error)")
                            try? await VirtualTime.sleep(for: .milliseconds(500))
                        }
                    }
                }
            })
        }

        // The timeline.
        let timeline = Task {
            for e in scenario.events {
                await clock.sleep(until: e.at)
                guard let l = scenario.links.first(where: { $0.name == e.link }), let i = scenario.links.firstIndex(of: l) else { continue }
                let address = Self.address(l.between[1], l)
                switch e.action {
                case .cut: net.cut(address)
                case .off: net.drop(address)
                case .restore: net.restore(address)
                case .loss:
                    net.setConditions(MemoryRunNetwork.conditions(l, loss: e.loss, seed: i + 100 * e.at, lossSeed: lossSeed), for: address)
                }
                log.add(clock.now, "event", "\(e.action.rawValue) \(e.link)" + (e.loss.map { " \(Int($0 * 100))%" } ?? ""))
            }
        }

        // Traffic, each from its sender's session to its receiver.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-mesh-src-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let traffic = try RunParts.send(scenario, session: { t in sessions[t.from] }, peer: { t in nodes[t.to]?.peerID },
                                        clock: clock, dir: dir) { log.add(clock.now, "error", $0) }

        // Carriers, from each pair's inviting side.
        var sampling: [Task<([RunRecord.Span], [RunRecord.Span]), Never>] = []
        for (dialer, listener, links) in pairs {
            guard let session = sessions[dialer], let peer = nodes[listener]?.peerID else { continue }
            sampling.append(RunParts.sampleCarriers(session, peer: peer, clock: clock, duration: scenario.duration,
                                                    intervalMs: sampleInterval) { Self.link(of: $0, in: links) })
        }

        let finished = Task { for s in traffic.tasks { await s.value } }
        await clock.sleep(until: scenario.duration)
        trace("duration reached")
        if await !finishes(finished, within: 5) {
            log.add(clock.now, "error", "traffic still being sent at the end of the run; stopped")
            for s in traffic.tasks { s.cancel() }
        }
        timeline.cancel()
        for c in connecting { c.cancel() }
        var upSpans: [RunRecord.Span] = [], carrierSpans: [RunRecord.Span] = []
        for s in sampling {
            let (u, c) = await s.value
            upSpans += u
            carrierSpans += c
        }
        for name in scenario.nodes {
            guard let s = sessions[name] else { continue }
            if await !finishes(Task { await s.disconnect() }, within: 5) { log.add(clock.now, "error", "\(name)'s leave took over 5 s") }
        }
        for t in background { t.cancel() }
        for a in advertisers { await a.stop() }
        for n in nodes.values { await n.stop() }

        var streams = receiver.streams()
        for i in streams.indices { (streams[i].sent, streams[i].failedSends) = traffic.tally.counts(i) }
        return RunRecord(scenario: scenario.name, backend: "memory", duration: scenario.duration, links: scenario.links.map(\.name),
                         upSpans: upSpans.sorted { ($0.from, $0.link) < ($1.from, $1.link) },
                         carrierSpans: carrierSpans.sorted { ($0.from, $0.link, $0.role ?? "") < ($1.from, $1.link, $1.role ?? "") },
                         events: log.all, streams: streams, resources: receiver.resources(expected: traffic.resourceSizes))
    }

    /// The pairs of nodes links join: (dialer, listener, their links), in the order of the file.
    static func pairs(_ links: [Scenario.LinkSpec]) -> [(String, String, [Scenario.LinkSpec])] {
        var out: [(String, String, [Scenario.LinkSpec])] = []
        for l in links where l.kind != .wifiDirect {
            if let i = out.firstIndex(where: { $0.0 == l.between[0] && $0.1 == l.between[1] }) { out[i].2.append(l) } else {
                out.append((l.between[0], l.between[1], [l]))
            }
        }
        return out
    }

    private static func name(of peer: PeerID, in nodes: [String: Node]) -> String {
        nodes.first { $0.value.peerID == peer }?.key ?? peer.short
    }
}
