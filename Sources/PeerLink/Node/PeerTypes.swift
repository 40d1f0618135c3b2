import Foundation
import PeerLinkWire
import PeerLinkCore

/// A peer found by a browser: who it is, what it publishes and where it can be reached.
public struct PeerInfo: Sendable, Hashable, Codable {
    /// The peer's ID (its public key).
    public var peerID: PeerID
    /// The name the peer advertises; metadata only, not authenticated.
    public var displayName: String
    /// The discovery info the peer publishes (key–value pairs chosen by its application).
    public var info: [String: String]
    /// Where the peer can be dialled, on every medium it advertises, in advertised order.
    public var endpoints: [TransportEndpoint]

    /// Makes a record of a peer.
    public init(peerID: PeerID, displayName: String, info: [String: String], endpoints: [TransportEndpoint]) {
        self.peerID = peerID; self.displayName = displayName; self.info = info; self.endpoints = endpoints
    }
}

/// A remote peer's state in a session (MultipeerConnectivity's vocabulary).
public enum PeerState: String, Sendable, Codable {
    /// `notConnected`: not in the session (a join failed or the peer left); `connecting`: a link is
    /// up and the invitation is being answered; `connected`: in the session, ready for messages.
    case notConnected = "not-connected", connecting, connected
}

/// How a message is delivered.
public enum SendMode: String, Sendable, Codable {
    /// Exactly once, in order, across link changes.
    case reliable
    /// At most once, possibly out of order; never retransmitted.
    case unreliable
}

/// Errors of the session layer as the application sees them.
public enum PeerLinkError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The peer has no channel in this session (it never joined, or it left).
    case notConnected(PeerID)
    /// The peer declined the invitation.
    case invitationDeclined(PeerID)
    /// The peer did not answer the invitation within the time given (`after`).
    case invitationTimedOut(PeerID, after: Duration)
    /// No link to the peer could be set up; `failures` holds why each attempt failed, or one
    /// `DialFailure.Reason.noUsableEndpoint` when the peer has no endpoint this node can use.
    case unreachable(PeerID, failures: [DialFailure])
    /// A device advertising a peer-ID prefix (hex) could not be asked who it is; `failures`
    /// holds why each endpoint failed.
    case unresolved(prefix: String, failures: [DialFailure])
    /// The receiver declined the resource with this name without accepting it.
    case resourceDeclined(String)
    /// A resource or stream failed: cancelled by either side, a SHA-256 mismatch, a reserved
    /// stream name…
    case resourceFailed(ResourceFailure)
    /// The receiver refused or stopped the resource `name`, and said why (disk full, …).
    case resourceRefused(name: String, reason: ResourceError)
    /// A file (the key, the trust list, a file sent or received) could not be read or written.
    case file(FileFailure)
    /// More than `limit` invitations were waiting for an answer, so this one was declined.
    case tooManyPendingInvitations(limit: Int)

    public var description: String {
        switch self {
        case let .notConnected(p): return "peer \(p.short) is not connected"
        case let .invitationDeclined(p): return "peer \(p.short) declined the invitation"
        case let .invitationTimedOut(p, d): return "peer \(p.short) did not answer the invitation within \(d.secondsText) s"
        case let .unreachable(p, failures): return "could not reach peer \(p.short): " + failures.map(\.description).joined(separator: "; ")
        case let .unresolved(prefix, failures): return "could not learn who device \(prefix)… is: " + failures.map(\.description).joined(separator: "; ")
        case let .resourceDeclined(n): return "the receiver declined '\(n)'"
        case let .resourceFailed(why): return "transfer failed: \(why)"
        case let .resourceRefused(_, reason): return "\(reason)"
        case let .file(failure): return failure.description
        case let .tooManyPendingInvitations(limit): return "more than \(limit) invitations are pending; declined"
        }
    }
}
