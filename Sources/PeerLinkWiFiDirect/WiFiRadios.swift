import Foundation
import PeerLink

/// A Wi-Fi radio's own network interface (not a P2P group interface).
public struct WiFiRadio: Sendable, Equatable, Codable {
    /// `wlan0`
    public var interface: String
    /// `phy0`
    public var phy: String
    /// The interface's MAC address, from sysfs; nil when it cannot be read.
    public var address: MACAddress?
}

/// Finds radios in sysfs and their devices over nl80211. `sysClassNet` is injectable so the
/// "no radio" case is tested on any machine.
enum WiFiRadios {
    static let defaultSysClassNet = "/sys/class/net"

    /// Interfaces with a `phy80211` link, group interfaces left out (by nl80211 type when
    /// `devices` is given, else by the `p2p-` name wpa_supplicant gives them).
    static func list(sysClassNet: String = defaultSysClassNet, devices: [WirelessDevice]? = nil) -> [WiFiRadio] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: sysClassNet)) ?? []
        return names.sorted().compactMap { name -> WiFiRadio? in
            let base = "\(sysClassNet)/\(name)"
            guard FileManager.default.fileExists(atPath: "\(base)/phy80211") else { return nil }
            if let d = devices?.first(where: { $0.interfaceName == name }) {
                if d.type == .p2pClient || d.type == .p2pGroupOwner { return nil }
            } else if name.hasPrefix("p2p-") {
                return nil
            }
            let phy = read("\(base)/phy80211/name") ?? "phy?"
            return WiFiRadio(interface: name, phy: phy, address: read("\(base)/address").flatMap { MACAddress($0) })
        }
    }

    /// Whether `name` is a Wi-Fi interface in sysfs.
    static func isRadio(_ name: String, sysClassNet: String = defaultSysClassNet) -> Bool {
        !name.isEmpty && !name.contains("/") && FileManager.default.fileExists(atPath: "\(sysClassNet)/\(name)/phy80211")
    }

    /// Throws `noSuchRadio` / `noRadio` unless `name` is a radio.
    static func require(_ name: String, sysClassNet: String = defaultSysClassNet) throws {
        guard isRadio(name, sysClassNet: sysClassNet) else {
            throw list(sysClassNet: sysClassNet).isEmpty ? WiFiError.noRadio : WiFiError.noSuchRadio(name)
        }
    }

    static func read(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Where the P2P device that wpa_supplicant would use for radio `name` is. wpa_supplicant
    /// runs one P2P device per process: when `supplicantInterfaces` (the interfaces that
    /// wpa_supplicant manages) include a radio whose wiphy has one, that is the one, and
    /// another radio gets none. P2P devices on radios it does not manage belong to other
    /// processes. Without `supplicantInterfaces`, every P2P device elsewhere counts.
    static func p2pDevice(for name: String, devices: [WirelessDevice]?, supplicantInterfaces: [String]? = nil) -> RadioFacts.P2PDevice {
        guard let devices else { return .unknown }
        guard let wiphy = devices.first(where: { $0.interfaceName == name })?.wiphy else { return .unknown }
        let p2p = devices.filter { $0.type == .p2pDevice }
        if p2p.isEmpty { return .none }
        if p2p.contains(where: { $0.wiphy == wiphy }) { return .thisRadio }
        let p2pWiphys = Set(p2p.map(\.wiphy))
        func isRadio(_ d: WirelessDevice) -> Bool { d.interfaceName != nil && d.type != .p2pClient && d.type != .p2pGroupOwner && d.type != .p2pDevice }
        if let mine = supplicantInterfaces {
            let owners = devices.filter { d in isRadio(d) && p2pWiphys.contains(d.wiphy) && mine.contains(d.interfaceName ?? "") }
            return owners.isEmpty ? .none : .otherRadios(owners.compactMap(\.interfaceName))
        }
        let others = p2p.compactMap { dev in devices.first { $0.wiphy == dev.wiphy && isRadio($0) }?.interfaceName }
        return .otherRadios(others.isEmpty ? p2p.map { "phy index \($0.wiphy)" } : others)
    }

    /// The P2P device address of radio `name`: the P2P-device wdev on its wiphy, else (drivers
    /// that run P2P on the main interface) the radio's own address.
    static func p2pDeviceAddress(for name: String, devices: [WirelessDevice]?) -> MACAddress? {
        guard let devices, let me = devices.first(where: { $0.interfaceName == name }) else { return nil }
        if let d = devices.first(where: { $0.type == .p2pDevice && $0.wiphy == me.wiphy }) { return d.address }
        return devices.contains { $0.type == .p2pDevice } ? nil : me.address
    }
}
