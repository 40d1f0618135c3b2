import Foundation
import Synchronization
import PeerLinkCore
import PeerLinkWire

/// What a node made of one incoming connection: why it ended before the handshake finished,
/// or what the node decided about the link.
enum IncomingOutcome: Equatable, Sendable {
    /// The handshake failed (`LinkError` text: bad message, wrong key, timed out, closed).
    case handshakeFailed(String)
    /// A browser learned who this node is and left (PROTOCOL §14.3); nobody was asked.
    case identified(PeerID)
    /// The first frame after the handshake was not an invitation.
    case notAnInvitation(PeerID)
    /// Another link of a peer already in a session: it joined without asking.
    case joined(PeerID)
    /// Crossed invitations: `accepted` when the peer's invitation won.
    case crossed(PeerID, accepted: Bool)
    /// Declined without asking (nobody answers invitations, or too many wait).
    case declinedUnasked(PeerID)
    /// The application was asked.
    case asked(PeerID)
}

/// The latest outcomes of a node's incoming connections, oldest first (at most `capacity`):
/// the record tests read to know that a decision was made, and which.
final class IncomingOutcomes: Sendable {
    private let items = Mutex<[IncomingOutcome]>([])
    let capacity = 64

    func record(_ o: IncomingOutcome) {
        let capacity = self.capacity
        items.withLock { items in
            items.append(o)
            if items.count > capacity { items.removeFirst(items.count - capacity) }
        }
    }

    var all: [IncomingOutcome] { items.withLock { $0 } }
}
