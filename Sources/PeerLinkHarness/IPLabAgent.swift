import Foundation
import PeerLink
import PeerLinkBluetooth

/// One node of an IP-lab run, inside its namespace: reads `AgentProtocol.Command` lines on
/// stdin, writes `AgentProtocol.Report` lines on stdout. The dialler sends the scenario's
/// traffic and samples its carriers like `MemoryBackend`; the listener accepts and records
/// what arrives. Both are real PeerLink nodes over kernel TCP.
public final class IPLabAgent: @unchecked Sendable {
    public enum Role: String, Sendable { case dialer, listener }

    private let role: Role
    private let out = NSLock()
    private var scenario: Scenario?
    private var links: [AgentProtocol.LinkSetup] = []
    private var node: Node?
    private var session: Session?
    private var advertiser: Advertiser?
    private var tasks: [Task<Void, Never>] = []
    private var receiver: Receiver?
    private var relays: [DelayRelay] = []
    private var dialerResult: Task<AgentProtocol.Result, Never>?
    private let inbox = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-iplab-\(UUID().uuidString)").path

    public init(role: Role) { self.role = role }

    /// Runs until `finish` (or stdin closes).
    public func run() async {
        defer { try? FileManager.default.removeItem(atPath: inbox) }
        for await line in Self.stdinLines() where !line.isEmpty {
            do {
                switch try AgentProtocol.decode(AgentProtocol.Command.self, from: line) {
                case let .setup(scenario, links, port): try await setup(scenario, links, port: port)
                case let .go(t0, peer, endpoints, later): try await go(t0: t0, peer: peer, endpoints: endpoints, later: later)
                case .finish:
                    await finish()
                    return
                }
            } catch {
                send(.failed("\(role.rawValue): \(error)"))
                return
            }
        }
        FileHandle.standardError.write(Data("agent \(role.rawValue): stdin closed before finish\n".utf8))
    }

    private func send(_ r: AgentProtocol.Report) {
        guard let line = try? AgentProtocol.encode(r) else { return }
        out.withLock { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    }

    private func setup(_ scenario: Scenario, _ links: [AgentProtocol.LinkSetup], port: UInt16) async throws {
        self.scenario = scenario
        self.links = links
        let transports: [Transport] = links.map { l in
            l.kind == .bluetooth ? EmulatedBluetoothTransport(bindHost: l.local) as Transport : TCPTransport(bindHost: l.local)
        }
        let node = try Node(identity: Identity(), displayName: role == .dialer ? "sender" : "receiver", transports: transports)
        let session = Session(node: node, policy: scenario.linkPolicy)
        self.node = node
        self.session = session
        // Before the advertiser, which would otherwise start the node on a random port.
        try await node.start(port: port)
        if role == .listener {
            // netem's stand-in: a link with a delay is reached through a delaying relay.
            for l in links {
                guard let spec = scenario.links.first(where: { $0.name == l.name }), spec.delay > 0 else { continue }
                relays.append(try DelayRelay(host: l.local, listenPort: AgentProtocol.relayPort(for: port), targetPort: port,
                                             delayMilliseconds: spec.delay))
            }
            let advertiser = Advertiser(node: node, service: try ServiceType("harness"), discovery: MemoryDiscovery())
            try await advertiser.start()
            self.advertiser = advertiser
            tasks.append(Task { for await i in advertiser.invitations { i.accept(into: session) } })
        }
        send(.ready(peer: node.peerID))
    }

    private func go(t0: UInt64, peer: PeerID?, endpoints: [TransportEndpoint], later: [AgentProtocol.LaterEndpoint]) async throws {
        guard let scenario, let session, let node else { throw AgentError("go before setup") }
        let clock = RunClock(start: t0)
        if role == .listener {
            let receiver = Receiver(streams: scenario.traffic.filter { $0.kind == .messages }.count, clock: clock)
            self.receiver = receiver
            tasks.append(RunParts.receive(session, into: receiver, inbox: inbox))
            return
        }
        guard let peer else { throw AgentError("the dialler needs the listener's peer ID") }
        let names = links
        @Sendable func linkName(_ remote: String) -> String? {
            let host = remote.range(of: "://").map { remote[$0.upperBound...] } ?? remote[...]
            return names.first { host.hasPrefix($0.subnetPrefix) }?.name
        }
        tasks.append(Task {
            for await e in session.events {
                switch e {
                case let .carrierChanged(_, link, role, reason):
                    self.send(.mark(.init(at: clock.now, kind: "carrier", text: "\(role.rawValue) → link \(link): \(reason)")))
                case let .linkChanged(_, link, medium, up, reason):
                    self.send(.mark(.init(at: clock.now, kind: "link", text: "link \(link) (\(medium.rawValue)) \(up ? "up" : "down"): \(reason)")))
                case let .linkAttemptFailed(_, endpoint, failure, retryIn):
                    self.send(.mark(.init(at: clock.now, kind: "attempt", text: "\(endpoint) failed: \(failure.explanation); retry in \(retryIn / .seconds(1)) s")))
                default: break
                }
            }
        })
        try await node.invite(PeerInfo(peerID: peer, displayName: "receiver", info: [:], endpoints: endpoints), to: session, timeout: .seconds(10))
        send(.mark(.init(at: clock.now, kind: "start", text: "invited over \(endpoints.map(\.description).joined(separator: ", "))")))

        let sampling = RunParts.sampleCarriers(session, clock: clock, duration: scenario.duration, intervalMs: 25) { linkName($0.remote) }
        let appearing = Task {
            var current = endpoints
            for l in later.sorted(by: { $0.at < $1.at }) {
                await clock.sleep(until: l.at)
                current.append(l.endpoint)
                await session.update(PeerInfo(peerID: peer, displayName: "receiver", info: [:], endpoints: current))
                self.send(.mark(.init(at: clock.now, kind: "event", text: "\(l.link) appears")))
            }
        }
        let traffic = try RunParts.send(scenario, over: session, to: peer, clock: clock, dir: inbox + "/out") { text in
            self.send(.mark(.init(at: clock.now, kind: "error", text: text)))
        }
        dialerResult = Task {
            var result = AgentProtocol.Result()
            for s in traffic.tasks { await s.value }
            result.sent = traffic.sentStreams()
            await clock.sleep(until: scenario.duration)
            appearing.cancel()
            (result.upSpans, result.carrierSpans) = await sampling.value
            return result
        }
    }

    private func finish() async {
        var result = AgentProtocol.Result()
        if let dialerResult {
            result = await dialerResult.value
        } else if let receiver, let scenario {
            result.received = receiver.streams()
            result.resources = receiver.resources(expected: scenario.traffic.filter { $0.kind == .resource }.map(\.size))
        }
        send(.result(result))
        if role == .dialer { await session?.disconnect() }
        for t in tasks { t.cancel() }
        await advertiser?.stop()
        await node?.stop()
        for r in relays { r.close() }
    }

    /// Lines of stdin, read on a thread of their own.
    static func stdinLines() -> AsyncStream<String> {
        AsyncStream { c in
            Thread.detachNewThread {
                var splitter = LineSplitter()
                while true {
                    let data = FileHandle.standardInput.availableData
                    if data.isEmpty { break }
                    for l in splitter.feed(data) { c.yield(l) }
                }
                c.finish()
            }
        }
    }
}

/// A Bluetooth link emulated by an IP path: TCP bound to the link's address, reported as RFCOMM
/// so the node keeps a listener per medium and the link policy treats it as Bluetooth.
struct EmulatedBluetoothTransport: Transport {
    let medium = Medium.rfcomm
    let ip: TCPTransport
    init(bindHost: String) { ip = TCPTransport(bindHost: bindHost) }

    func listen(port: UInt16, onConnection: @escaping @Sendable (MessageConnection) -> Void) throws -> TransportListener {
        try ip.listen(port: port) { onConnection(RFCOMMLabelled($0)) }
    }

    func connect(to endpoint: TransportEndpoint, timeout: Duration) async throws -> MessageConnection {
        RFCOMMLabelled(try await ip.connect(to: TransportEndpoint(medium: .tcp, host: endpoint.host, port: endpoint.port), timeout: timeout))
    }
}

/// A TCP connection that says it is RFCOMM (and offers no IP address for datagrams, like a
/// Bluetooth link).
final class RFCOMMLabelled: MessageConnection {
    let inner: MessageConnection
    init(_ inner: MessageConnection) { self.inner = inner }
    var medium: Medium { .rfcomm }
    var remoteDescription: String {
        let d = inner.remoteDescription
        return "rfcomm://" + (d.range(of: "://").map { d[$0.upperBound...] } ?? d[...])
    }
    func enqueue(_ message: [UInt8]) { inner.enqueue(message) }
    var queuedBytes: Int { inner.queuedBytes }
    func flush() async { await inner.flush() }
    func receive() async throws -> [UInt8]? { try await inner.receive() }
    func receiveBatch(limit: Int) async throws -> [[UInt8]]? { try await inner.receiveBatch(limit: limit) }
    func close() { inner.close() }
    var remoteHost: String? { nil }
}
