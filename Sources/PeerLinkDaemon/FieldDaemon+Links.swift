import PeerLink

/// The daemon session's links, for `GET /v1/status` (and so `peerlink links`).
extension FieldDaemon {
    public func apiLinks() async -> DaemonLinks {
        DaemonLinks(policy: session.policy.kind.rawValue, peers: await session.links())
    }

    public func apiPeers() async -> [DaemonPeer] {
        found.values.sorted { $0.peerID < $1.peerID }.map { DaemonPeer(info: $0, connected: linked.contains($0.peerID)) }
    }
}
