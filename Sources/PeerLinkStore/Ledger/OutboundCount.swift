import PeerLinkWire

/// How many outbound items one peer has in one state: a row of `Ledger.counts(in:)`.
public struct OutboundCount: Sendable, Hashable {
    public let peer: PeerID
    public let state: OutboundItem.State
    public let count: Int

    public init(peer: PeerID, state: OutboundItem.State, count: Int) {
        self.peer = peer; self.state = state; self.count = count
    }
}
