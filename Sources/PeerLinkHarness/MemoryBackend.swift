import Foundation
import PeerLink
import PeerLinkTesting
import PeerLinkBluetooth
import PeerLinkWiFiDirect

/// Runs a scenario somewhere and records what happened.
public protocol ScenarioBackend: Sendable {
    var name: String { get }
    func run(_ scenario: Scenario) async throws -> RunRecord
}

/// Runs scenarios between two real PeerLink nodes in this process over the in-memory medium:
/// each `[[link]]` is a pair of `MemoryTransport`s emulating Bluetooth (RFCOMM) or Wi-Fi (TCP)
/// with the scenario's bandwidth, delay and loss. Everything above the transport (Noise,
/// sessions, link manager, link policy) is the production code, run in virtual time by a
/// `Simulation` on one thread: the same seed gives the same run, to the byte, and a run takes
/// far less than its scenario's duration.
public struct MemoryBackend: ScenarioBackend {
    public let name = "memory"
    /// How often the carriers are sampled (ms).
    public var sampleInterval = 25
    /// The seed of the run's random numbers (identities, tokens, loss); each scenario mixes
    /// its name in, so one seed gives every scenario a run of its own.
    public var seed: UInt64

    public init(seed: UInt64 = 1) { self.seed = seed }

    /// The seed a scenario's run uses.
    public func seed(for scenario: Scenario) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a of the name, mixed with the seed
        for b in scenario.name.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h ^ seed
    }

    public func run(_ scenario: Scenario) async throws -> RunRecord {
        let name = self.name, interval = sampleInterval
        let limit = Duration.milliseconds(scenario.duration) + .seconds(120)
        do {
            return try VirtualTime.run(seed: seed(for: scenario), limit: limit) {
                if !scenario.daemons.isEmpty {
                    var run = DaemonRun()
                    run.sampleInterval = interval
                    return try await run.run(scenario, lossSeed: VirtualTime.random())
                }
                if scenario.nodes.count > 2 || !InProcessRun.sendsOneWay(scenario) {
                    var mesh = MeshRun()
                    mesh.sampleInterval = interval
                    return try await mesh.run(scenario, lossSeed: VirtualTime.random())
                }
                // Built inside the simulation: its loss decisions draw from the run's seed.
                var run = InProcessRun(backend: name, network: MemoryRunNetwork(scenario))
                run.sampleInterval = interval
                return try await run.run(scenario)
            }
        } catch let e as VirtualTime.Failure {
            throw HarnessError.simulation("\(e) (seed \(seed))")
        }
    }
}

/// The in-memory medium for a run: the receiver's side of link `x` is address `b-x`.
struct MemoryRunNetwork: RunNetwork {
    let net = MemoryNetwork()
    /// The wifi-direct link's stand-in on each side (MemoryUpgrader), if the scenario has one.
    let group: (spec: Scenario.LinkSpec, sender: MemoryUpgrader, receiver: MemoryUpgrader)?

    /// The seed of the loss decisions on each link: from the run's random numbers.
    let lossSeed = VirtualTime.random()

    init(_ scenario: Scenario) {
        let net = self.net, lossSeed = self.lossSeed
        func conditions(_ l: Scenario.LinkSpec, seed: Int) -> MemoryLinkConditions {
            Self.conditions(l, seed: seed, lossSeed: lossSeed)
        }
        for (i, l) in scenario.links.enumerated() { net.setConditions(conditions(l, seed: i), for: "b-\(l.name)") }
        if let i = scenario.links.firstIndex(where: { $0.kind == .wifiDirect }) {
            let l = scenario.links[i], c = conditions(l, seed: i)
            group = (l, MemoryUpgrader(network: net, name: "a-\(l.name)", groupConditions: c),
                     MemoryUpgrader(network: net, name: "b-\(l.name)", groupConditions: c))
        } else {
            group = nil
        }
    }

    func upgraders(receiver: Bool) -> [LinkUpgrader] {
        guard let group else { return [] }
        return [receiver ? group.receiver : group.sender]
    }

    static func medium(_ l: Scenario.LinkSpec) -> Medium { l.kind == .bluetooth ? .rfcomm : .tcp }

    static func conditions(_ l: Scenario.LinkSpec, loss: Double? = nil, seed: Int, lossSeed: UInt64) -> MemoryLinkConditions {
        MemoryLinkConditions(bandwidth: l.bandwidth, delay: .milliseconds(l.delay), loss: loss ?? l.loss,
                             seed: lossSeed ^ UInt64(seed + 1))
    }

    func transports(receiver: Bool, links: [Scenario.LinkSpec]) throws -> [Transport] {
        links.map { MemoryTransport(network: net, address: "\(receiver ? "b" : "a")-\($0.name)", emulating: Self.medium($0)) }
    }

    func endpoint(of link: Scenario.LinkSpec, ports: [Medium: UInt16]) -> TransportEndpoint {
        TransportEndpoint(medium: Self.medium(link), host: "b-\(link.name)", port: 0)
    }

    func link(of snapshot: LinkSnapshot, in links: [Scenario.LinkSpec]) -> String? {
        if snapshot.medium == .memoryGroup { return group?.spec.name }
        return links.first { snapshot.remote == "memory://b-\($0.name)" }?.name
    }

    func setReachable(_ link: Scenario.LinkSpec, _ reachable: Bool) async throws {
        if reachable { net.restore("b-\(link.name)") } else { net.drop("b-\(link.name)") }
    }

    func apply(_ e: Scenario.TimedEvent, to l: Scenario.LinkSpec, index: Int) async throws {
        if let group, l.kind == .wifiDirect {
            // The system takes the group down (radio off, out of range): every link on it closes.
            guard e.action == .off || e.action == .cut else { return }
            for u in [group.sender, group.receiver] { for g in u.hostedGroups { u.tearDownFromOutside(g) } }
            return
        }
        let address = "b-\(l.name)"
        switch e.action {
        case .cut: net.cut(address)
        case .off: net.drop(address)
        case .restore: net.restore(address)
        case .loss: net.setConditions(Self.conditions(l, loss: e.loss, seed: index + 100 * e.at, lossSeed: lossSeed), for: address)
        }
    }

    func tearDown() async {}
}
