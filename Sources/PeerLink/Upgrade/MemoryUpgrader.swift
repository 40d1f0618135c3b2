import Foundation
import Synchronization
import PeerLinkCore
import PeerLinkWire

extension Medium {
    /// A negotiated Wi-Fi-class medium on a `MemoryNetwork`: the upgrade's stand-in in policy
    /// tests and the harness, as `MemoryTransport(emulating:)` stands in for radios.
    public static let memoryGroup = register("memory-group", traits: MediumTraits(
        linkClass: .ip, typicalBytesPerSecond: 20_000_000, negotiated: true, endpoint: .name))
}

/// Set-up medium on a `MemoryNetwork`: "forming a group" registers a fresh address that the
/// node listens on; "joining" returns it to dial. Tests choose what it can do, make a step
/// fail, and tear a group down as the system would.
public final class MemoryUpgrader: LinkUpgrading {
    public let medium: Medium
    /// The network its groups get addresses on.
    public let network: MemoryNetwork
    /// Prefix of the addresses this node's groups get.
    public let name: String
    private struct State {
        var roles: LinkSetup.Roles
        var reason: String
        var failing: String?
        var groups: [UpgradeID: (address: String, listener: TransportListener)] = [:]
        var left: [UpgradeID] = []
        var prepared: [UpgradeID] = []
        var standBys = 0
        var leaveDelay: Double = 0
        var unreachableFor: Double = 0
    }
    private let state: Mutex<State>
    /// Bandwidth, delay and loss of the links on groups this node forms.
    public let groupConditions: MemoryLinkConditions

    /// Makes an upgrader on `network` that can take `roles` (host, join); with no roles it
    /// reports `unavailable` as the reason. Its groups' addresses start with `name`, and links on
    /// groups it forms get `groupConditions`.
    package init(network: MemoryNetwork, name: String, roles: LinkSetup.Roles = [.host, .join], unavailable reason: String = "",
                medium: Medium = .memoryGroup, groupConditions: MemoryLinkConditions = MemoryLinkConditions()) {
        self.network = network
        self.groupConditions = groupConditions
        self.name = name
        self.state = Mutex(State(roles: roles, reason: reason))
        self.medium = medium
    }

    /// Makes an upgrader on `network` that can host and join groups. Its groups' addresses
    /// start with `name`, and links on groups it forms get `groupConditions`.
    public convenience init(network: MemoryNetwork, name: String, groupConditions: MemoryLinkConditions = MemoryLinkConditions()) {
        self.init(network: network, name: name, roles: [.host, .join], unavailable: "", medium: .memoryGroup, groupConditions: groupConditions)
    }

    public var transport: Transport { MemoryTransport(network: network, address: "\(name)/joiner", emulating: medium) }

    package func availability() async -> LinkUpgrade.Availability {
        state.withLock { LinkUpgrade.Availability(roles: $0.roles, reason: $0.reason) }
    }

    /// Makes the next `host` or `join` fail with `why` (nil: succeed).
    public func failNextStep(_ why: String?) { state.withLock { $0.failing = why } }

    package func host(_ id: UpgradeID, listen: @escaping @Sendable (Transport) throws -> TransportListener) async throws -> [LinkSetup.Parameter] {
        if let why = state.withLock({ s -> String? in defer { s.failing = nil }; return s.failing }) { throw TransportError.unsupported(why) }
        let address = "\(name)/group-\(id.peer.short)-\(id.id)"
        network.setConditions(groupConditions, for: address)
        let listener = try listen(MemoryTransport(network: network, address: address, emulating: medium))
        state.withLock { $0.groups[id] = (address, listener) }
        let wait = state.withLock { $0.unreachableFor }
        if wait > 0 {
            // As a host whose address is still in DAD: dials fail until it is done.
            network.cut(address)
            Task { [network] in
                try? await Runtime.sleep(nanoseconds: UInt64(wait * 1e9))
                network.restore(address)
            }
        }
        return [LinkSetup.Parameter("address", string: address)]
    }

    /// Makes each group this node hosts unreachable (dials fail with EHOSTUNREACH) for this
    /// long after it is handed out, as a Wi-Fi host whose address is still in DAD (tests).
    public func handOutBeforeReachable(by time: Duration) { state.withLock { $0.unreachableFor = time.inSeconds } }

    /// Only noted (`preparedJoins`): a memory group needs nothing before its address.
    public func prepare(_ id: UpgradeID) { state.withLock { $0.prepared.append(id) } }

    /// Only counted (`sessionsStandingBy`): a memory medium has nothing to get ready.
    public func standBy() { state.withLock { $0.standBys += 1 } }
    public func standDown() async { state.withLock { $0.standBys -= 1 } }
    /// `standBy` calls not yet balanced by `standDown`.
    public var sessionsStandingBy: Int { state.withLock { $0.standBys } }

    package func join(_ id: UpgradeID, parameters: [LinkSetup.Parameter]) async throws -> TransportEndpoint {
        if let why = state.withLock({ s -> String? in defer { s.failing = nil }; return s.failing }) { throw TransportError.unsupported(why) }
        guard let raw = parameters.first(where: { $0.name == "address" })?.value, let address = String(validating: raw, as: UTF8.self),
              !address.isEmpty else {
            throw TransportError.badAddress("the host's set-up names no address")
        }
        return TransportEndpoint(medium: medium, host: address, port: 0)
    }

    /// Makes each `leave` take this long, as removing a real group does (tests).
    public func delayLeaves(by time: Duration) { state.withLock { $0.leaveDelay = time.inSeconds } }

    public func leave(_ id: UpgradeID) async {
        let delay = state.withLock { $0.leaveDelay }
        if delay > 0 { try? await Runtime.sleep(nanoseconds: UInt64(delay * 1e9)) }
        let g = state.withLock { s -> (address: String, listener: TransportListener)? in
            s.left.append(id)
            return s.groups.removeValue(forKey: id)
        }
        guard let g else { return }
        g.listener.close()
        network.drop(g.address)
    }

    /// Addresses of the groups this node hosts now.
    public var hostedGroups: [String] { state.withLock { $0.groups.values.map(\.address) } }
    /// Negotiations this node has left (host or join side).
    public var leftGroups: [UpgradeID] { state.withLock { $0.left } }
    /// Negotiations this node was asked to prepare to join.
    public var preparedJoins: [UpgradeID] { state.withLock { $0.prepared } }

    /// Tears down a hosted group from outside, as the system would (radio off, group removed):
    /// every link on it closes at once.
    public func tearDownFromOutside(_ address: String) { network.drop(address) }
}
