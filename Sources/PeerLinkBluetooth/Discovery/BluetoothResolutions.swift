import Foundation
import PeerLink

/// Sans-I/O bookkeeping of Bluetooth browsing: turns device sightings (an address and an advert
/// carrying a 6-byte peer-ID prefix) and the outcomes of resolving them (`Node.resolve`) into
/// discovery events about whole peers (PROTOCOL §14.3). The I/O edge (`BlueZDiscovery`) runs
/// the returned actions.
///
/// Rules: a device is resolved once per advert (an RSSI change is not a reason to connect
/// again); a failed resolution is retried with a growing delay while the device is seen; a
/// peer is found when its first device resolves and lost when its last device is lost.
struct BluetoothResolutions {
    enum Action: Equatable {
        /// Connect to the sighting's endpoints and learn who it is; report the outcome with
        /// `generation`. `after` seconds from now (0 = at once).
        case resolve(BluetoothSighting, generation: Int, after: Double)
        case emit(DiscoveryEvent)
    }

    private struct Device {
        var sighting: BluetoothSighting
        var generation: Int
        var failures = 0
        var peer: PeerID?
    }

    /// Seconds before the n-th retry (1-based): 2, 4, 8, 16, then 30.
    static func retryDelay(afterFailures n: Int) -> Double { min(30, pow(2, Double(max(1, n)))) }

    private var devices: [String: Device] = [:]  // by address
    private var peers: [PeerID: PeerInfo] = [:]   // resolved, with the endpoints of all its devices
    private var nextGeneration = 1

    /// A device was found or its advert (or only its RSSI) changed.
    mutating func sighted(_ s: BluetoothSighting) -> [Action] {
        if var d = devices[s.address] {
            let advertChanged = d.sighting.advert != s.advert
            d.sighting = s
            devices[s.address] = d
            guard advertChanged else { return [] }
            // New channel/PSM or another node behind the address: ask again.
            var out = forget(address: s.address)
            out += start(s)
            return out
        }
        return start(s)
    }

    /// The device is gone (no longer advertising, adapter off, bluetoothd gone).
    mutating func lost(address: String) -> [Action] { forget(address: address) }

    /// A resolution finished. Stale outcomes (the device changed or left meanwhile) are ignored.
    mutating func resolved(address: String, generation: Int, as info: PeerInfo) -> [Action] {
        guard var d = devices[address], d.generation == generation, d.peer == nil else { return [] }
        d.peer = info.peerID
        d.failures = 0
        devices[address] = d
        let endpoints = endpoints(of: info.peerID)
        if var known = peers[info.peerID] {
            known.endpoints = endpoints
            known.displayName = info.displayName
            known.info = info.info
            peers[info.peerID] = known
            return [.emit(.updated(known))]
        }
        var fresh = info
        fresh.endpoints = endpoints
        peers[info.peerID] = fresh
        return [.emit(.found(fresh))]
    }

    /// A resolution failed: one notice per failure, and a retry later while the device is seen.
    mutating func failed(address: String, generation: Int, reason: String) -> [Action] {
        guard var d = devices[address], d.generation == generation, d.peer == nil else { return [] }
        d.failures += 1
        let delay = Self.retryDelay(afterFailures: d.failures)
        d.generation = takeGeneration()
        devices[address] = d
        let prefix = d.sighting.advert.peerIDPrefix.map { String(format: "%02x", $0) }.joined()
        return [
            .emit(.notice("Bluetooth device \(address) (peer \(prefix)…) did not say who it is: \(reason); trying again in \(Int(delay)) s")),
            .resolve(d.sighting, generation: d.generation, after: delay),
        ]
    }

    private mutating func start(_ s: BluetoothSighting) -> [Action] {
        let g = takeGeneration()
        devices[s.address] = Device(sighting: s, generation: g)
        return [.resolve(s, generation: g, after: 0)]
    }

    private mutating func forget(address: String) -> [Action] {
        guard let d = devices.removeValue(forKey: address), let peer = d.peer else { return [] }
        let remaining = endpoints(of: peer)
        if remaining.isEmpty {
            peers[peer] = nil
            return [.emit(.lost(peer))]
        }
        peers[peer]?.endpoints = remaining
        return peers[peer].map { [.emit(.updated($0))] } ?? []
    }

    private func endpoints(of peer: PeerID) -> [TransportEndpoint] {
        devices.values.filter { $0.peer == peer }.sorted { $0.sighting.address < $1.sighting.address }
            .flatMap(\.sighting.endpoints)
    }

    private mutating func takeGeneration() -> Int {
        defer { nextGeneration += 1 }
        return nextGeneration
    }
}
