/// Merges what several discovery backends (Avahi, BlueZ, …) report into one record per peer
/// ID: a peer seen over Wi-Fi and Bluetooth is one peer with the endpoints of both. Pure state,
/// no I/O; the browser feeds it every backend's events.
import PeerLinkCore
import PeerLinkWire
struct PeerRecords: Sendable {
    /// The latest record of each peer per backend (index into the browser's discoveries).
    private var bySource: [Int: [PeerID: PeerInfo]] = [:]
    private var merged: [PeerID: PeerInfo] = [:]

    /// Applies one backend's event; returns the merged event to report, if anything changed.
    mutating func apply(_ event: DiscoveryEvent, from source: Int) -> DiscoveryEvent? {
        switch event {
        case let .found(p), let .updated(p):
            bySource[source, default: [:]][p.peerID] = p
            return remerge(p.peerID)
        case let .lost(id):
            guard bySource[source]?.removeValue(forKey: id) != nil else { return nil }
            return remerge(id)
        case .notice:
            return event
        }
    }

    /// The merged record of every peer currently known.
    var all: [PeerInfo] { Array(merged.values) }

    private mutating func remerge(_ id: PeerID) -> DiscoveryEvent? {
        let parts = bySource.keys.sorted().compactMap { bySource[$0]?[id] }
        guard let first = parts.first else {
            return merged.removeValue(forKey: id) != nil ? .lost(id) : nil
        }
        var info = first
        for p in parts.dropFirst() {
            for e in p.endpoints where !info.endpoints.contains(e) { info.endpoints.append(e) }
            info.info.merge(p.info) { mine, _ in mine }
            if info.displayName.isEmpty { info.displayName = p.displayName }
        }
        let before = merged.updateValue(info, forKey: id)
        if before == nil { return .found(info) }
        return before == info ? nil : .updated(info)
    }
}
