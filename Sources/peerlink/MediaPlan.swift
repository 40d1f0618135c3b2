import ArgumentParser
import Foundation
import PeerLink
import PeerLinkAvahi
import PeerLinkBluetooth
import PeerLinkWiFiDirect

/// Which media a command uses, from `--media`, `--adapter` and `--wifi`: the node's transports,
/// its negotiated media and the discovery backends that go with them.
struct MediaPlan: Sendable {
    enum Choice: String, CaseIterable {
        /// IP, plus Bluetooth when bluetoothd has a powered adapter, plus Wi-Fi Direct upgrades
        /// when a radio can do them.
        case auto
        case ip
        case bluetooth
        /// Wi-Fi Direct groups negotiated inside a session (needs a session on another medium).
        case wifiDirect = "wifi-direct"
        /// IP and Bluetooth (Bluetooth must work), plus Wi-Fi Direct when a radio can do it.
        case all
    }

    /// Which Bluetooth transports a node listens and dials on (`--bluetooth-transports`).
    enum BluetoothTransport: String, CaseIterable {
        case rfcomm
        /// L2CAP over BR/EDR (ERTM).
        case l2cap
        /// L2CAP over Bluetooth LE (credit-based): instead of BR/EDR L2CAP, on both peers.
        case le
    }

    let ip: Bool
    /// The adapter to use (name as bluetoothd calls it), or nil without Bluetooth.
    let adapter: BlueZAdapter?
    /// The Bluetooth transports, in the order the node tries them.
    var bluetooth: [BluetoothTransport] = [.rfcomm, .l2cap]
    /// What the user should know about the choice (Bluetooth skipped by `auto`, and why).
    let notes: [String]
    /// `auto` wanted Bluetooth but found no powered adapter: one may come later (a Pi's UART
    /// controller attached after boot, a dongle plugged in).
    var bluetoothAwaited = false
    /// The Wi-Fi Direct plug-in, when the plan includes it.
    var wifiDirect: WiFiDirectUpgrader? = nil

    var upgraders: [LinkUpgrader] { wifiDirect.map { [$0] } ?? [] }

    var transports: [Transport] {
        var out: [Transport] = []
        if ip { out.append(TCPTransport()) }
        if let adapter {
            for t in bluetooth {
                switch t {
                case .rfcomm: out.append(RFCOMMTransport(adapterAddress: adapter.address))
                case .l2cap: out.append(L2CAPTransport(adapterAddress: adapter.address))
                case .le: out.append(L2CAPTransport(adapterAddress: adapter.address, mode: .le))
                }
            }
        }
        return out
    }

    func discoveries(for node: Node) -> [Discovery] {
        var out: [Discovery] = []
        if ip { out.append(AvahiDiscovery()) }
        if let adapter { out.append(BlueZDiscovery(node: node, adapter: adapter.name)) }
        return out
    }

    /// "IP (_x._tcp) and Bluetooth (hci0)", for notes.
    func summary(_ service: ServiceType) -> String {
        var parts: [String] = []
        if ip { parts.append("IP (\(service.dnssdTCP))") }
        if let adapter {
            let links = bluetooth == [.rfcomm, .l2cap] ? "" : ": " + bluetooth.map(\.rawValue).joined(separator: ", ")
            parts.append("Bluetooth (\(adapter.name)\(links))")
        }
        if let w = wifiDirect { parts.append("Wi-Fi Direct upgrades (\(w.requestedInterface ?? "first capable radio"))") }
        return parts.joined(separator: " and ")
    }

    /// The D-Bus address of the wpa_supplicant to use when it is not on the system bus
    /// (`PEERLINK_WPA_SUPPLICANT_BUS`; the lab runs one per radio on buses of their own).
    static var wpaSupplicantBus: String? { ProcessInfo.processInfo.environment["PEERLINK_WPA_SUPPLICANT_BUS"] }

    static func parse(_ text: String) throws -> Choice {
        switch text {
        case "ip", "wifi", "tcp": return .ip
        case "bluetooth", "bt": return .bluetooth
        case "wifi-direct", "p2p": return .wifiDirect
        case "auto": return .auto
        case "all": return .all
        default:
            throw ValidationError("--media '\(text)' is not known; use one of: " + Choice.allCases.map(\.rawValue).joined(separator: ", ")
                                  + ", or a list such as bluetooth,wifi-direct")
        }
    }

    /// The Bluetooth transports of `--bluetooth-transports` (a comma-separated list, in order).
    static func parseBluetooth(_ text: String) throws -> [BluetoothTransport] {
        var out: [BluetoothTransport] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingCharacters(in: .whitespaces)
            guard let t = BluetoothTransport(rawValue: name) else {
                throw ValidationError("--bluetooth-transports: '\(name)' is not known; use rfcomm, l2cap or le, or a list such as rfcomm,le")
            }
            if !out.contains(t) { out.append(t) }
        }
        if out.contains(.l2cap) && out.contains(.le) {
            throw ValidationError("--bluetooth-transports: l2cap and le exclude each other (a node advertises one L2CAP PSM); pick one")
        }
        return out
    }

    /// Decides the media from `--media` (one choice or a comma-separated list), `--adapter`,
    /// `--wifi` and `--bluetooth-transports` (nil: RFCOMM and BR/EDR L2CAP); `probe` lists
    /// bluetoothd's adapters (throws when it is unreachable).
    static func make(media: String, adapter: String?, wifi: String? = nil, bluetooth: String? = nil,
                     probe: () throws -> [BlueZAdapter] = { try BlueZProbe.adapters() }) throws -> MediaPlan {
        let choices = Set(try media.split(separator: ",").map { try parse($0.trimmingCharacters(in: .whitespaces)) })
        guard !choices.isEmpty else { throw ValidationError("--media is empty") }
        if choices.count > 1, choices.contains(.auto) || choices.contains(.all) {
            throw ValidationError("--media auto and all stand alone; list media without them (e.g. bluetooth,wifi-direct)")
        }
        let soft = choices == [.auto]
        let wantsIP = choices.contains(.ip) || soft || choices.contains(.all)
        let wantsBT = choices.contains(.bluetooth) || soft || choices.contains(.all)
        let wantsP2P = choices.contains(.wifiDirect) || soft || choices.contains(.all)
        if adapter != nil, !wantsBT { throw ValidationError("--adapter needs --media bluetooth, all or auto") }
        if wifi != nil, !wantsP2P { throw ValidationError("--wifi needs --media wifi-direct, all or auto") }
        if bluetooth != nil, !wantsBT { throw ValidationError("--bluetooth-transports needs --media bluetooth, all or auto") }
        let links = try bluetooth.map(parseBluetooth) ?? [.rfcomm, .l2cap]
        if choices == [.wifiDirect] {
            throw ValidationError("--media wifi-direct alone cannot find peers: a Wi-Fi Direct link is negotiated inside a session on another medium; use bluetooth,wifi-direct")
        }
        var plan: MediaPlan
        if !wantsBT {
            plan = MediaPlan(ip: true, adapter: nil, notes: [])
        } else {
            do {
                let chosen = try pickAdapter(adapter, from: try probe())
                plan = MediaPlan(ip: wantsIP, adapter: chosen, notes: [])
            } catch {
                guard soft, adapter == nil else {
                    let named = choices.map(\.rawValue).sorted().joined(separator: ",")
                    throw RuntimeFailure("--media \(named): Bluetooth is not usable: \(error) (run `peerlink doctor`)")
                }
                plan = MediaPlan(ip: true, adapter: nil, notes: ["Bluetooth not used: \(error)"])
                plan.bluetoothAwaited = true
            }
        }
        plan.bluetooth = links
        if wantsP2P { plan.wifiDirect = WiFiDirectUpgrader(wifi: WiFiDirect(busAddress: wpaSupplicantBus), interface: wifi) }
        return plan
    }

    /// The adapter named (`hci1`) or addressed (`AA:BB:…`) by `wanted`, else the first powered
    /// one; it must be powered.
    static func pickAdapter(_ wanted: String?, from adapters: [BlueZAdapter]) throws -> BlueZAdapter {
        let names = adapters.map { "\($0.name) (\($0.address)\($0.powered ? "" : ", off"))" }.joined(separator: ", ")
        let chosen: BlueZAdapter
        if let wanted {
            guard let a = adapters.first(where: { $0.name == wanted || $0.address.caseInsensitiveCompare(wanted) == .orderedSame }) else {
                throw RuntimeFailure("no Bluetooth adapter '\(wanted)'" + (adapters.isEmpty ? " (bluetoothd has none)" : "; there are: \(names)"))
            }
            chosen = a
        } else {
            guard let a = adapters.first(where: \.powered) ?? adapters.first else {
                throw RuntimeFailure("bluetoothd has no adapter (is a controller attached? `btmgmt info`)")
            }
            chosen = a
        }
        guard chosen.powered else {
            throw RuntimeFailure("adapter \(chosen.name) is powered off (power it on: `bluetoothctl power on` or `btmgmt --index \(chosen.name.dropFirst(3)) power on`)")
        }
        return chosen
    }
}
