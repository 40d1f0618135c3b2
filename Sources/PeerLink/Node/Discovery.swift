import Foundation
import Synchronization
import PeerLinkCore
import PeerLinkWire

/// What a discovery backend reports while browsing.
public enum DiscoveryEvent: Sendable, Equatable {
    /// A peer appeared, with its record.
    case found(PeerInfo)
    /// The peer's record changed (new address, new discovery info).
    case updated(PeerInfo)
    /// The peer's record is gone (withdrawn, or no longer seen).
    case lost(PeerID)
    /// Something the user should know (daemon gone, record ignored and why).
    case notice(String)
}

/// A running publication or browse; stop it when done.
public protocol DiscoveryHandle: Sendable {
    /// Ends the publication or browse; it may block on the backend's daemon for seconds.
    func stop()
}

/// Publishes and finds PeerLink nodes on one medium (Avahi DNS-SD, BlueZ, in-memory).
/// `publish`, `browse` and a handle's `stop()` may block on their daemon for seconds:
/// `Advertiser` and `Browser` call them on threads of their own.
public protocol Discovery: Sendable {
    /// Publishes `advertisement` for `service`, reachable on the node's bound `ports` (one per
    /// medium it listens on; each backend publishes the media it carries and throws if none of
    /// them is bound). `notices` receives human-readable changes (renamed after a collision,
    /// daemon restarted).
    func publish(_ advertisement: Advertisement, service: ServiceType, ports: [Medium: UInt16],
                 notices: @escaping @Sendable (String) -> Void) throws -> DiscoveryHandle
    /// Browses for `service`; events arrive on `handler` until the handle is stopped.
    func browse(_ service: ServiceType, handler: @escaping @Sendable (DiscoveryEvent) -> Void) throws -> DiscoveryHandle
}

/// In-process discovery for tests and the in-memory medium.
public final class MemoryDiscovery: Discovery {
    private struct State {
        var records: [ServiceType: [PeerID: PeerInfo]] = [:]
        var browsers: [UUID: (ServiceType, @Sendable (DiscoveryEvent) -> Void)] = [:]
    }
    private let state = Mutex(State())
    /// The memory-transport address each published node listens on, by peer.
    public let addressOf: @Sendable (PeerID) -> String

    /// A registry no node is published in yet; `addressOf` maps a node to its memory-transport
    /// address (its peer ID's description by default).
    public init(addressOf: @escaping @Sendable (PeerID) -> String = { $0.description }) { self.addressOf = addressOf }

    struct Handle: DiscoveryHandle { let onStop: @Sendable () -> Void; func stop() { onStop() } }

    public func publish(_ ad: Advertisement, service: ServiceType, ports: [Medium: UInt16],
                        notices: @escaping @Sendable (String) -> Void) throws -> DiscoveryHandle {
        guard let port = ports[.tcp] ?? ports[.memory] ?? ports.values.first else {
            throw TransportError.unsupported("the node has no bound port to publish")
        }
        let info = PeerInfo(peerID: ad.peerID, displayName: ad.displayName, info: ad.info.entries,
                            endpoints: [TransportEndpoint(medium: .memory, host: addressOf(ad.peerID), port: port)])
        let targets = state.withLock { s in
            s.records[service, default: [:]][ad.peerID] = info
            return s.browsers.values.filter { $0.0 == service }.map(\.1)
        }
        for t in targets { t(.found(info)) }
        return Handle { [weak self] in self?.unpublish(ad.peerID, service) }
    }

    private func unpublish(_ peer: PeerID, _ service: ServiceType) {
        let targets: [@Sendable (DiscoveryEvent) -> Void] = state.withLock { s in
            guard s.records[service]?.removeValue(forKey: peer) != nil else { return [] }
            return s.browsers.values.filter { $0.0 == service }.map(\.1)
        }
        for t in targets { t(.lost(peer)) }
    }

    public func browse(_ service: ServiceType, handler: @escaping @Sendable (DiscoveryEvent) -> Void) throws -> DiscoveryHandle {
        let id = UUID()
        let existing = state.withLock { s in
            s.browsers[id] = (service, handler)
            return Array((s.records[service] ?? [:]).values)
        }
        for r in existing { handler(.found(r)) }
        return Handle { [weak self] in self?.state.withLock { _ = $0.browsers.removeValue(forKey: id) } }
    }
}
