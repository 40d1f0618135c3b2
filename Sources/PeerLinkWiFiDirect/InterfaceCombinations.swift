import PeerLink
/// One of a driver's "valid interface combinations" (`iw list`): which interfaces may exist
/// on the radio at the same time. A P2P group needs its own interface beside the radio's
/// station interface, so a driver that lists P2P-GO among its modes but in no combination
/// with a station cannot run a group without taking the station's place.
public struct WiFiInterfaceCombination: Sendable, Codable, Equatable, CustomStringConvertible {
    /// At most `max` interfaces whose types are among `types`.
    public struct Limit: Sendable, Codable, Equatable {
        /// The most interfaces of these types at once.
        public var max: Int
        /// The interface types the limit covers.
        public var types: Set<WiFiInterfaceType>
    }

    /// Every limit of the combination; an interface must fit one of them.
    public var limits: [Limit]
    /// At most this many interfaces in all.
    public var total: Int
    /// How many different channels they may use at once.
    public var channels: Int

    /// Whether interfaces of `wanted` types (one entry per interface) may exist together.
    public func allows(_ wanted: [WiFiInterfaceType]) -> Bool {
        guard wanted.count <= total else { return false }
        var room = limits.map(\.max)
        // Each interface takes a place in one limit that lists its type; tiny sizes, so try
        // every assignment.
        func place(_ i: Int) -> Bool {
            guard i < wanted.count else { return true }
            for (k, l) in limits.enumerated() where room[k] > 0 && l.types.contains(wanted[i]) {
                room[k] -= 1
                if place(i + 1) { return true }
                room[k] += 1
            }
            return false
        }
        return place(0)
    }

    /// As `iw list` writes it: `#{ managed, P2P-GO } <= 2, total <= 2, #channels <= 1`.
    public var description: String {
        let parts = limits.map { l in
            "#{ " + l.types.sorted { $0.rawValue < $1.rawValue }.map(\.description).joined(separator: ", ") + " } <= \(l.max)"
        }
        return (parts + ["total <= \(total)", "#channels <= \(channels)"]).joined(separator: ", ")
    }
}

extension Nl80211 {
    static let attrInterfaceCombinations: UInt16 = 120
    static let combLimits: UInt16 = 1, combMaxNum: UInt16 = 2, combNumChannels: UInt16 = 4
    static let limitMax: UInt16 = 1, limitTypes: UInt16 = 2

    /// The combinations in an `NL80211_ATTR_INTERFACE_COMBINATIONS` attribute. Malformed
    /// entries (no total, no limits, unknown types only) are left out, never trusted.
    static func combinations(_ attribute: NetlinkMessages.Attribute) -> [WiFiInterfaceCombination] {
        attribute.nested.compactMap { comb -> WiFiInterfaceCombination? in
            let fields = comb.nested
            guard let total = fields.first(where: { $0.type == combMaxNum })?.u32, total > 0,
                  let limitsAttr = fields.first(where: { $0.type == combLimits }) else { return nil }
            let limits = limitsAttr.nested.compactMap { l -> WiFiInterfaceCombination.Limit? in
                guard let max = l.nested.first(where: { $0.type == limitMax })?.u32, max > 0,
                      let types = l.nested.first(where: { $0.type == limitTypes }) else { return nil }
                let set = Set(types.nested.compactMap { WiFiInterfaceType(rawValue: UInt32($0.type)) })
                return set.isEmpty ? nil : .init(max: Int(min(max, 1 << 16)), types: set)
            }
            guard !limits.isEmpty else { return nil }
            let channels = fields.first { $0.type == combNumChannels }?.u32 ?? 1
            return WiFiInterfaceCombination(limits: limits, total: Int(min(total, 1 << 16)), channels: Int(min(channels, 1 << 8)))
        }
    }

    /// Whether a P2P group (owner and client) can run beside the radio's station interface:
    /// nil when the driver reports no combinations (it then allows one interface at a time).
    static func groupBesideStation(_ combinations: [WiFiInterfaceCombination]?) -> Bool? {
        guard let combinations, !combinations.isEmpty else { return nil }
        let go = combinations.contains { $0.allows([.station, .p2pGroupOwner]) }
        let client = combinations.contains { $0.allows([.station, .p2pClient]) }
        return go && client
    }
}
