import PeerLinkStore

/// What the daemon's gauges read at a scrape: taken from the daemon, the session and the
/// ledger when `GET /metrics` comes, not kept up to date between scrapes.
public struct MetricsSnapshot: Sendable, Equatable {
    public var peersConnected: Int
    public var peersFound: Int
    /// Links up now, by medium name (`Medium.description`).
    public var linksUp: [String: Int]
    /// Pending outbound items (queued, sending) per peer and state.
    public var pending: [OutboundCount]

    public init(peersConnected: Int = 0, peersFound: Int = 0, linksUp: [String: Int] = [:], pending: [OutboundCount] = []) {
        self.peersConnected = peersConnected; self.peersFound = peersFound; self.linksUp = linksUp; self.pending = pending
    }
}
