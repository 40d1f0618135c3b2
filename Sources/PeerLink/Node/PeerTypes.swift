import Foundation
@_exported import PeerLinkWire
@_exported import PeerLinkCore

/// A peer found by a browser: who it is, what it publishes and where it can be reached.
public struct PeerInfo: Sendable, Hashable, Codable {
    public var peerID: PeerID
    public var displayName: String
    public var info: [String: String]
    public var endpoints: [TransportEndpoint]

    public init(peerID: PeerID, displayName: String, info: [String: String], endpoints: [TransportEndpoint]) {
        self.peerID = peerID; self.displayName = displayName; self.info = info; self.endpoints = endpoints
    }
}

/// A remote peer's state in a session (MultipeerConnectivity's vocabulary).
public enum PeerState: String, Sendable, Codable {
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
    case notConnected(PeerID)
    case invitationDeclined(PeerID)
    case invitationTimedOut(PeerID, seconds: Double)
    case unreachable(PeerID, reasons: [String])
    /// A device advertising a peer-ID prefix (hex) could not be asked who it is.
    case unresolved(prefix: String, reasons: [String])
    case resourceDeclined(String)
    case resourceFailed(String)
    /// The receiver refused or stopped the resource `name`, and said why (disk full, …).
    case resourceRefused(name: String, reason: ResourceError)
    case file(String)
    case tooManyPendingInvitations(limit: Int)

    public var description: String {
        switch self {
        case let .notConnected(p): return "peer \(p.short) is not connected"
        case let .invitationDeclined(p): return "peer \(p.short) declined the invitation"
        case let .invitationTimedOut(p, s): return "peer \(p.short) did not answer the invitation within \(s) s"
        case let .unreachable(p, reasons): return "could not reach peer \(p.short): " + reasons.joined(separator: "; ")
        case let .unresolved(prefix, reasons): return "could not learn who device \(prefix)… is: " + reasons.joined(separator: "; ")
        case let .resourceDeclined(n): return "the receiver declined '\(n)'"
        case let .resourceFailed(why): return "transfer failed: \(why)"
        case let .resourceRefused(_, reason): return "\(reason)"
        case let .file(why): return why
        case let .tooManyPendingInvitations(limit): return "more than \(limit) invitations are pending; declined"
        }
    }
}
