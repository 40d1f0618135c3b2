import PeerLink
import PeerLinkStore

/// What the daemon's gauges read at a scrape: taken from the daemon, the session and the
/// ledger when `GET /metrics` comes, not kept up to date between scrapes.
public struct MetricsSnapshot: Sendable, Equatable {
    public var peersConnected: Int
    public var peersFound: Int
    /// Links up now, by medium name (`Medium.description`).
    public var linksUp: [String: Int]
    /// Bytes on the wire of every link the session had, by medium name: never smaller than
    /// in an earlier snapshot.
    public var wireBytes: [String: WireBytes]
    /// Pending outbound items (queued, sending) per peer and state.
    public var pending: [OutboundCount]

    public init(peersConnected: Int = 0, peersFound: Int = 0, linksUp: [String: Int] = [:],
                wireBytes: [String: WireBytes] = [:], pending: [OutboundCount] = []) {
        self.peersConnected = peersConnected; self.peersFound = peersFound; self.linksUp = linksUp
        self.wireBytes = wireBytes; self.pending = pending
    }
}
