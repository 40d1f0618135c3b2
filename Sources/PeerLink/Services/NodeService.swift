import PeerLinkCore
import Synchronization
import PeerLinkWire

/// A protocol PeerLink runs with the peers of a session for itself, not for the application:
/// resources (files) today, store-and-forward and relay next. Registered with the `Node`
/// (`Node.register`), it gets one `PeerProtocolHandler` per peer channel, as rust-libp2p's
/// network behaviours get one connection handler per connection. A service that talks over
/// streams names them with the reserved prefix `peerlink/` (`streamPrefix`): a peer's stream
/// with that name goes to the service's handler, never to the application's events.
package protocol NodeService: Sendable {
    /// The service's name, for diagnostics.
    var name: String { get }
    /// The stream names the service answers (starting with `NodeServices.reservedPrefix`),
    /// or nil when it uses no named streams.
    var streamPrefix: String? { get }
    /// The service's side of one peer channel, made when the channel is.
    func makeHandler(peer: PeerID, session: Session) -> any PeerProtocolHandler
}

/// A node service's state and work with one peer. It lives inside its peer channel and is
/// called on the channel's actor, in the order the channel's events happen, so it may act on
/// the channel (its session core, its links' bulk activity) directly.
package protocol PeerProtocolHandler: AnyObject {
    /// A session event of the channel. Returns true when the handler took it (the channel then
    /// does nothing more with it).
    func handle(_ event: SessionEvent, in channel: isolated PeerChannel) -> Bool
    /// A peer opened a stream whose name is this handler's service's (`streamPrefix`).
    func streamOpened(_ stream: IncomingStream, in channel: isolated PeerChannel)
    /// The end of a `process` pass of the channel: work batched during the pass goes out.
    func passEnded(in channel: isolated PeerChannel)
    /// The channel ended (the peer left, its last link died); `reason` says why.
    func ended(reason: String, in channel: isolated PeerChannel)
}

extension PeerProtocolHandler {
    package func streamOpened(_ stream: IncomingStream, in channel: isolated PeerChannel) { Task { await stream.cancel() } }
    package func passEnded(in channel: isolated PeerChannel) {}
    package func ended(reason: String, in channel: isolated PeerChannel) {}
}

/// The node's registered services.
package enum NodeServices {
    /// Stream names starting with this belong to PeerLink's own services; an application may
    /// not open one, and a peer's is refused unless a service answers it.
    package static let reservedPrefix = "peerlink/"

    /// Whether `name` is a reserved stream name.
    package static func isReserved(_ name: String) -> Bool { name.hasPrefix(reservedPrefix) }
}

/// A node's registered services (`Node.register`).
package final class ServiceRegistry: Sendable {
    private let services = Mutex<[any NodeService]>([])

    /// The services, in the order they were registered.
    package var all: [any NodeService] { services.withLock { $0 } }

    func add(_ service: any NodeService) throws {
        try services.withLock { list in
            if let prefix = service.streamPrefix {
                guard NodeServices.isReserved(prefix), prefix.count > NodeServices.reservedPrefix.count else {
                    throw ServiceRegistrationError(message: "service \(service.name): stream prefix '\(prefix)' must start with '\(NodeServices.reservedPrefix)' and name the service")
                }
                if let other = list.first(where: { $0.streamPrefix.map { $0.hasPrefix(prefix) || prefix.hasPrefix($0) } ?? false }) {
                    throw ServiceRegistrationError(message: "service \(service.name): stream prefix '\(prefix)' overlaps service \(other.name)'s")
                }
            }
            list.append(service)
        }
    }
}

/// Why a service could not be registered.
package struct ServiceRegistrationError: Error, CustomStringConvertible {
    package let message: String
    package var description: String { message }
}
