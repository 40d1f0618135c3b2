import Foundation
import PeerLink

/// A wireless device (wdev) the kernel knows: a netdev like `wlan0` or `p2p-wlan0-0`, or a
/// netdev-less P2P device.
struct WirelessDevice: Sendable, Equatable {
    var wiphy: Int
    var interfaceName: String?
    var type: WiFiInterfaceType?
    var address: MACAddress?
}

/// A radio (wiphy) and the interface types its driver supports.
struct WirelessPhy: Sendable, Equatable {
    var index: Int
    var name: String
    var interfaceTypes: Set<WiFiInterfaceType>
    /// Its valid interface combinations; nil when the driver reports none.
    var combinations: [WiFiInterfaceCombination]? = nil
}

/// Reads radios and wireless devices from the kernel over nl80211 (what `iw list` and
/// `iw dev` show). Blocking: call from a dedicated queue.
enum Nl80211 {
    static let getWiphy: UInt8 = 1, getInterface: UInt8 = 5
    static let attrWiphy: UInt16 = 1, attrWiphyName: UInt16 = 2, attrIfindex: UInt16 = 3, attrIfname: UInt16 = 4
    static let attrIftype: UInt16 = 5, attrMAC: UInt16 = 6, attrSupportedIftypes: UInt16 = 32, attrSplitWiphyDump: UInt16 = 174

    /// nil when the kernel has no nl80211 (cfg80211 not loaded: no Wi-Fi at all).
    static func phys() throws -> [WirelessPhy]? {
        let sock = try GenericNetlinkSocket()
        guard let family = try sock.family("nl80211") else { return nil }
        let msgs = try sock.exchange(family: family, command: getWiphy, flags: NetlinkMessages.dumpFlags,
                                     attributes: [.flag(attrSplitWiphyDump)])
        return mergePhys(msgs)
    }

    /// nil when the kernel has no nl80211.
    static func devices() throws -> [WirelessDevice]? {
        let sock = try GenericNetlinkSocket()
        guard let family = try sock.family("nl80211") else { return nil }
        let msgs = try sock.exchange(family: family, command: getInterface, flags: NetlinkMessages.dumpFlags, attributes: [])
        return msgs.compactMap(device)
    }

    /// A split wiphy dump sends each radio in several messages: merge them by index.
    static func mergePhys(_ msgs: [NetlinkMessages.Message]) -> [WirelessPhy] {
        var byIndex: [Int: WirelessPhy] = [:]
        for m in msgs {
            guard let idx = m.attributes.first(where: { $0.type == attrWiphy })?.u32 else { continue }
            var phy = byIndex[Int(idx)] ?? WirelessPhy(index: Int(idx), name: "phy\(idx)", interfaceTypes: [])
            for a in m.attributes {
                if a.type == attrWiphyName, let n = a.string { phy.name = n }
                if a.type == attrSupportedIftypes {
                    for t in a.nested { if let type = WiFiInterfaceType(rawValue: UInt32(t.type)) { phy.interfaceTypes.insert(type) } }
                }
                if a.type == attrInterfaceCombinations { phy.combinations = (phy.combinations ?? []) + combinations(a) }
            }
            byIndex[Int(idx)] = phy
        }
        return byIndex.values.sorted { $0.index < $1.index }
    }

    static func device(_ m: NetlinkMessages.Message) -> WirelessDevice? {
        guard let wiphy = m.attributes.first(where: { $0.type == attrWiphy })?.u32 else { return nil }
        let name = m.attributes.first { $0.type == attrIfname }?.string
        let type = m.attributes.first { $0.type == attrIftype }?.u32.flatMap { WiFiInterfaceType(rawValue: $0) }
        let mac = m.attributes.first { $0.type == attrMAC }.flatMap { MACAddress(bytes: $0.payload) }
        return WirelessDevice(wiphy: Int(wiphy), interfaceName: name, type: type, address: mac)
    }
}
