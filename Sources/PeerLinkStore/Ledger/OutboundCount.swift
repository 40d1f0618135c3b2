import PeerLinkWire

/// How many outbound items one peer has in one state: a row of `Ledger.counts(in:)`.
public struct OutboundCount: Sendable, Hashable {
    /// The peer the items are for.
    public let peer: PeerID
    /// The state counted.
    public let state: OutboundItem.State
    /// How many of the peer's items are in `state` (at least 1).
    public let count: Int

    /// Makes a row of the count.
    public init(peer: PeerID, state: OutboundItem.State, count: Int) {
        self.peer = peer; self.state = state; self.count = count
    }
}
