/// One distinct way to reach a peer: a link on it is independent of links on other paths.
import PeerLinkCore
import PeerLinkWire
package struct LinkPath: Hashable, Sendable {
    /// The endpoint dialled for the path (the first advertised for it).
    public var endpoint: TransportEndpoint
    /// What makes the path distinct: the radio and the remote address.
    public var key: String
}

/// Chooses which of a peer's advertised endpoints are worth a link each, in the order the
/// link policy prefers them. Pure: no I/O.
///
/// - Bluetooth: one path per remote device address (RFCOMM and L2CAP to the same device share
///   one radio; the first advertised wins).
/// - IP: one path per IPv4 address (distinct addresses are distinct interfaces, e.g. a dock's
///   Ethernet and Wi-Fi); IPv6 endpoints only when the medium has no IPv4 endpoint (DNS-SD
///   reports both families for the same interface).
/// - Other media (in-memory): one path per address.
/// Endpoints on media this node has no transport for, that the policy forbids, or that are
/// set up by negotiation (`MediumTraits.negotiated`) are left out.
package enum LinkPaths {
    /// The path a link to `host` on `medium` belongs to (as `select` keys it). Media whose
    /// endpoints are device addresses (`EndpointSyntax.bluetoothAddress`) share one path per
    /// remote device, whichever of them reaches it.
    public static func key(medium: Medium, host: String) -> String {
        medium.traits.endpoint == .bluetoothAddress ? "bluetooth/\(host.uppercased())" : "\(medium.rawValue)/\(host)"
    }

    /// The paths worth a link among `endpoints`: usable on `media` and allowed by `policy`, one
    /// endpoint per path, the policy's preferred link class first and advertised order within a
    /// class.
    public static func select(_ endpoints: [TransportEndpoint], policy: LinkPolicy.Kind, media: Set<Medium>) -> [LinkPath] {
        let usable = endpoints.filter { e in
            // Negotiated media (Wi-Fi Direct) are reached through LINK_SETUP, never from discovery.
            guard media.contains(e.medium), !e.medium.traits.negotiated else { return false }
            switch policy {
            case .bluetoothOnly: return e.medium.linkClass == .bluetooth
            case .ipOnly: return e.medium.linkClass != .bluetooth
            default: return true
            }
        }
        var seen = Set<String>()
        var paths: [LinkPath] = []
        let mediaWithIPv4 = Set(usable.filter { $0.medium.linkClass == .ip && !$0.host.contains(":") }.map(\.medium))
        for e in usable {
            if e.medium.linkClass == .ip, e.host.contains(":"), mediaWithIPv4.contains(e.medium) { continue }
            let key = Self.key(medium: e.medium, host: e.host)
            guard seen.insert(key).inserted else { continue }
            paths.append(LinkPath(endpoint: e, key: key))
        }
        // Stable sort by the policy's preferred class; advertised order within a class.
        let rank: (LinkPath) -> Int = { p in
            let c = p.endpoint.medium.linkClass
            switch policy {
            case .bluetoothFirst, .bluetoothOnly: return c == .bluetooth ? 0 : 1
            case .wifiFirst, .lowestLatency, .ipOnly: return c == .bluetooth ? 1 : 0
            }
        }
        return paths.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
    }
}
