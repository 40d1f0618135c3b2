import Foundation
import PeerLinkWire

/// Why a link could not be set up or was closed.
public enum LinkError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The Noise handshake failed: wrong protocol version, corrupted or hostile bytes.
    case handshakeFailed(String)
    /// The remote's key belongs to another peer than the one dialled.
    case unexpectedPeer(expected: PeerID, actual: PeerID)
    /// The remote's peer ID does not start with the bytes its advertisement promised.
    case unexpectedPeerPrefix(expected: [UInt8], actual: PeerID)
    /// The remote sent something the protocol does not allow.
    case protocolError(String)
    /// A step did not finish in time; the text names it (e.g. the secure handshake).
    case timedOut(String)
    /// The remote closed the link before it was ready.
    case closedByRemote

    public var description: String {
        switch self {
        case let .handshakeFailed(why): return "secure handshake failed: \(why)"
        case let .unexpectedPeer(e, a): return "the remote is peer \(a), not the expected peer \(e); link closed"
        case let .unexpectedPeerPrefix(e, a):
            let hex = e.map { String(format: "%02x", $0) }.joined()
            return "the remote is peer \(a), whose ID does not start with the advertised bytes \(hex); link closed"
        case let .protocolError(why): return "protocol error from the remote: \(why)"
        case let .timedOut(what): return "\(what) timed out"
        case .closedByRemote: return "the remote closed the connection"
        }
    }
}
