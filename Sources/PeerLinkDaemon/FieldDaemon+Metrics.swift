import PeerLink
import PeerLinkStore

/// What the metrics endpoint reads from the daemon at each scrape.
extension FieldDaemon {
    /// Peers, links and bytes on the wire per medium, and pending items now. A ledger that cannot be read leaves the
    /// item gauges as they were and counts a ledger error.
    public func metricsSnapshot() async -> MetricsSnapshot {
        var s = MetricsSnapshot(peersConnected: linked.count, peersFound: found.count)
        for peer in await session.links() {
            for link in peer.links { s.linksUp[link.medium.description, default: 0] += 1 }
        }
        for (medium, bytes) in session.wireBytes() { s.wireBytes[medium.description] = bytes }
        let ledger = self.ledger
        do {
            s.pending = try await Runtime.offload("pl.metrics.counts") { try ledger.counts(in: [.queued, .sending]) }
        } catch {
            log.debug("metrics: could not count the ledger's items", metadata: ["error": "\(error)"])
            metrics.error(.ledger)
        }
        return s
    }

    /// The metrics text after a fresh snapshot: what `GET /metrics` answers.
    public func metricsText() async -> [UInt8] {
        metrics.update(await metricsSnapshot())
        return metrics.exposition()
    }
}
