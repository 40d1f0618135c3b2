import PeerLinkWire

/// A node's decisions about incoming links, without I/O: what the first frame of a newly
/// authenticated link asks, and what the node answers. The edge (`Node`) feeds it what it
/// knows — the frame, the node's sessions with the same peer, its own invitation in flight —
/// and carries the decision out.
///
/// The rules (docs/PROTOCOL.md §8):
/// - a `close` first: a browser that only wanted to learn who this node is; nothing to answer;
/// - anything but `invite` first: a protocol error;
/// - a link of a peer whose first link was just accepted and is still joining, from the same
///   incarnation (session token): it waits for that join, then is decided again;
/// - a link of a peer already in a session with this node, same incarnation of both: it joins
///   without asking the application;
/// - both nodes invited each other at once: the invitation of the smaller peer ID wins, so the
///   larger answers `crossed` to the other's and accepts it into its own session otherwise;
/// - no application answering, or too many invitations pending: declined;
/// - else the application is asked, for at most the inviter's timeout (1…300 s).
package struct InvitationDesk: Sendable {
    /// What to do with an incoming link.
    package enum Decision: Equatable, Sendable {
        /// Close without a word (a browser's probe).
        case closeQuietly
        /// Close with a protocol error, saying why.
        case refuse(String)
        /// Wait until the accepted first link of the same incarnation has joined, then decide again.
        case waitForFirstLink
        /// Join the existing session with this peer (accept without asking).
        case join
        /// Crossed invitations, and this node's wins: answer `crossed` and close.
        case crossed
        /// Crossed invitations, and the peer's wins: accept it into the session this node was inviting into.
        case acceptIntoInvitingSession
        /// Decline, with the reason (for the node's record).
        case decline(String)
        /// Ask the application; it has `seconds` to answer.
        case ask(seconds: Double)
    }

    /// What the node knows about the link's peer when the first frame arrives.
    package struct Context: Sendable {
        package var localPeer: PeerID
        package var remotePeer: PeerID
        package var remoteToken: [UInt8]
        /// The session token of this peer's accepted link still joining, if any.
        package var joiningToken: [UInt8]?
        /// Whether a session of this node has a live channel to the peer with `remoteToken`.
        package var inSessionWithSameIncarnation: Bool
        /// Whether this node is inviting the peer right now.
        package var inviting: Bool
        /// Whether an application answers invitations (an advertiser runs).
        package var hasHandler: Bool

        package init(localPeer: PeerID, remotePeer: PeerID, remoteToken: [UInt8], joiningToken: [UInt8]? = nil,
                    inSessionWithSameIncarnation: Bool = false, inviting: Bool = false, hasHandler: Bool = true) {
            self.localPeer = localPeer; self.remotePeer = remotePeer; self.remoteToken = remoteToken
            self.joiningToken = joiningToken; self.inSessionWithSameIncarnation = inSessionWithSameIncarnation
            self.inviting = inviting; self.hasHandler = hasHandler
        }
    }

    /// Most invitations awaiting the application's answer at once.
    package let maxPending: Int
    /// Invitations the application has not answered yet.
    package private(set) var pending = 0

    package init(maxPending: Int) { self.maxPending = maxPending }

    /// The decision for a link whose first frame is `first`. An `.ask` counts as pending until
    /// `answered()`.
    package mutating func decide(first: Frame, _ c: Context) -> Decision {
        switch first {
        case .close: return .closeQuietly
        case let .invite(_, timeoutMillis, _):
            if let token = c.joiningToken, token == c.remoteToken { return .waitForFirstLink }
            if c.inSessionWithSameIncarnation { return .join }
            if c.inviting { return c.localPeer < c.remotePeer ? .crossed : .acceptIntoInvitingSession }
            guard c.hasHandler else { return .decline("nobody answers invitations here (no advertiser runs)") }
            guard pending < maxPending else { return .decline("\(maxPending) invitations already wait for an answer") }
            pending += 1
            return .ask(seconds: Self.answerSeconds(timeoutMillis: timeoutMillis))
        default:
            return .refuse("expected an invitation")
        }
    }

    /// The application answered (or did not, in time) an invitation this desk asked about.
    package mutating func answered() { pending = max(0, pending - 1) }

    /// How long the application may take to answer an invitation that allows `timeoutMillis`.
    package static func answerSeconds(timeoutMillis: UInt32) -> Double { min(max(Double(timeoutMillis) / 1000, 1), 300) }
}
