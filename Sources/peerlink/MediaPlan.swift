import ArgumentParser
import Foundation
import PeerLink

/// Which media a command uses, from `--media` and `--adapter`: the node's transports and the
/// discovery backends that go with them.
struct MediaPlan {
    enum Choice: String, CaseIterable {
        /// IP, plus Bluetooth when bluetoothd has a powered adapter.
        case auto
        case ip
        case bluetooth
        /// IP and Bluetooth; Bluetooth must work.
        case all
    }

    let ip: Bool
    /// The adapter to use (name as bluetoothd calls it), or nil without Bluetooth.
    let adapter: BlueZAdapter?
    /// What the user should know about the choice (Bluetooth skipped by `auto`, and why).
    let notes: [String]

    var transports: [Transport] {
        var out: [Transport] = []
        if ip { out.append(TCPTransport()) }
        if let adapter {
            out.append(RFCOMMTransport(adapterAddress: adapter.address))
            out.append(L2CAPTransport(adapterAddress: adapter.address))
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
        if let adapter { parts.append("Bluetooth (\(adapter.name))") }
        return parts.joined(separator: " and ")
    }

    static func parse(_ text: String) throws -> Choice {
        switch text {
        case "ip", "wifi", "tcp": return .ip
        case "bluetooth", "bt": return .bluetooth
        case "auto": return .auto
        case "all": return .all
        default:
            throw ValidationError("--media '\(text)' is not known; use one of: " + Choice.allCases.map(\.rawValue).joined(separator: ", "))
        }
    }

    /// Decides the media; `probe` lists bluetoothd's adapters (throws when it is unreachable).
    static func make(media: String, adapter: String?,
                     probe: () throws -> [BlueZAdapter] = { try BlueZProbe.adapters() }) throws -> MediaPlan {
        let choice = try parse(media)
        if choice == .ip {
            if adapter != nil { throw ValidationError("--adapter needs --media bluetooth, all or auto") }
            return MediaPlan(ip: true, adapter: nil, notes: [])
        }
        do {
            let chosen = try pickAdapter(adapter, from: try probe())
            return MediaPlan(ip: choice != .bluetooth, adapter: chosen, notes: [])
        } catch {
            guard choice == .auto, adapter == nil else {
                throw RuntimeFailure("--media \(choice.rawValue): Bluetooth is not usable: \(error) (run `peerlink doctor`)")
            }
            return MediaPlan(ip: true, adapter: nil, notes: ["Bluetooth not used: \(error)"])
        }
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
