import Foundation
import PeerLink
import PeerLinkDBus
import PeerLinkWire

/// What bluetoothd's device list says about pairings that make BlueZ refuse connections
/// between two PeerLink nodes.
///
/// PeerLink's Bluetooth sockets ask for the lowest security level, so two PeerLink nodes pair
/// with Just Works, answer "no bonding", and neither stores the key: every new link pairs
/// afresh and nothing is left behind. A **bond** (a stored link key, `Device1.Bonded`) changes
/// that. While both sides keep the same key, links authenticate with it; once one side no
/// longer has it (removed, reinstalled, paired anew elsewhere), the side that kept it answers
/// the other's pairing with a rejection (BlueZ's default `JustWorksRepairing = never`) and its
/// own connects fail authentication. Every connection between the two then ends in
/// "permission denied" until the bond is removed, and the side without the bond cannot see
/// why. PeerLink never needs a bond, so a bond with a device that advertises a PeerLink
/// service is reported.
///
/// bluetoothd drops `Paired` from an unbonded device when its link goes. A device still
/// `Paired` without a bond and without a link is left over from something else, and bluetoothd
/// rejects a re-pairing from it whenever the kernel asks (an agent with a display makes the
/// kernel ask on every incoming pairing).
///
/// Pure: reads a `GetManagedObjects` answer.
public struct BluetoothPairingProblem: Sendable, Equatable, CustomStringConvertible {
    /// Which of the two leftovers this is.
    public enum Kind: Sendable, Equatable {
        /// This side holds a bond with a device that advertises a PeerLink service.
        case bondWithPeer
        /// bluetoothd lists the device as paired, without a bond, while it is not connected.
        case pairedWithoutBond
    }

    /// Which leftover was found.
    public let kind: Kind
    /// The adapter's name (`hci1`).
    public let adapter: String
    /// The remote device's address.
    public let address: String
    /// The remote device's name, if bluetoothd knows one.
    public let name: String?

    public var description: String {
        let who = name.map { "\(address) (\($0))" } ?? address
        switch kind {
        case .bondWithPeer:
            return "\(adapter) holds a bond (a stored link key) with \(who), which advertises a PeerLink service. PeerLink never "
                + "needs one; if that device no longer holds the same key, BlueZ refuses every connection between the two "
                + "(\"permission denied — pairing was rejected\")"
        case .pairedWithoutBond:
            return "bluetoothd on \(adapter) lists \(who) as paired without a stored key while it is not connected: it rejects a "
                + "new pairing from that device (JustWorksRepairing = never), so connections with it can be refused"
        }
    }

    /// What to run, on this machine.
    public var fix: String {
        switch kind {
        case .bondWithPeer:
            return "`bluetoothctl remove \(address)` here (and on that device if it holds a bond with this one); "
                + "PeerLink then pairs afresh, unbonded, on every connection"
        case .pairedWithoutBond:
            return "`bluetoothctl remove \(address)`"
        }
    }

    /// The problems in bluetoothd's objects (`GetManagedObjects`), sorted by adapter and address.
    static func find(in objects: [String: [String: [String: DBusValue]]]) -> [BluetoothPairingProblem] {
        var out: [BluetoothPairingProblem] = []
        for (path, interfaces) in objects {
            guard let device = interfaces["org.bluez.Device1"], let address = device["Address"]?.string else { continue }
            let adapter = device["Adapter"]?.string.flatMap { $0.split(separator: "/").last.map(String.init) }
                ?? path.split(separator: "/").dropLast().last.map(String.init) ?? "?"
            let name = device["Name"]?.string ?? device["Alias"]?.string.flatMap { $0 == address.replacingOccurrences(of: ":", with: "-") ? nil : $0 }
            let bonded = device["Bonded"]?.bool ?? false
            let paired = device["Paired"]?.bool ?? false
            let connected = device["Connected"]?.bool ?? false
            if bonded, advertisesPeerLink(device["ServiceData"]) {
                out.append(BluetoothPairingProblem(kind: .bondWithPeer, adapter: adapter, address: address, name: name))
            } else if paired, !bonded, !connected {
                out.append(BluetoothPairingProblem(kind: .pairedWithoutBond, adapter: adapter, address: address, name: name))
            }
        }
        return out.sorted { ($0.adapter, $0.address) < ($1.adapter, $1.address) }
    }

    /// How many devices each adapter holds a bond with (all of them, PeerLink peers or not).
    static func bondCount(in objects: [String: [String: [String: DBusValue]]]) -> Int {
        objects.values.filter { $0["org.bluez.Device1"]?["Bonded"]?.bool == true }.count
    }

    /// Whether a Device1 `ServiceData` holds a PeerLink advert (PROTOCOL §14.2) under any UUID:
    /// the service type is not known here, the 10-byte format is.
    static func advertisesPeerLink(_ serviceData: DBusValue?) -> Bool {
        guard let serviceData else { return false }
        return serviceData.dictionary.contains { _, v in
            guard case let .array(items) = v.unwrapped else { return false }
            let bytes = items.compactMap { if case let .byte(b) = $0 { b } else { nil } }
            return bytes.count == items.count && (try? BluetoothAdvert.decode(bytes)) != nil
        }
    }
}
