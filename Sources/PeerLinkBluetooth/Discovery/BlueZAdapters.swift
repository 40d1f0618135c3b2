import Foundation
import PeerLink
import PeerLinkDBus

/// Why BlueZ could not be used over D-Bus; each case reads as a sentence for the user.
public enum BlueZError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No D-Bus system bus to talk to.
    case busUnavailable(String)
    /// The bus works but nothing owns `org.bluez`.
    case daemonNotRunning
    /// The requested adapter (or, for nil, any adapter) does not exist.
    case noAdapter(String?)
    /// bluetoothd owns its bus name but did not answer a call within the call's time limit.
    case noAnswer
    /// A BlueZ call failed.
    case call(String)

    public var description: String {
        switch self {
        case let .busUnavailable(why): return "cannot reach the D-Bus system bus (\(why)); start dbus-daemon --system"
        case .daemonNotRunning: return "bluetoothd is not running (nothing owns org.bluez on the system bus); start it with `systemctl start bluetooth` or `bluetoothd -n`"
        case let .noAdapter(name?): return "Bluetooth adapter \(name) is not known to bluetoothd"
        case .noAdapter(nil): return "bluetoothd reports no Bluetooth adapter"
        case .noAnswer: return "bluetoothd is running but did not answer in time (busy or stuck: `systemctl status bluetooth`, `journalctl -u bluetooth`)"
        case let .call(why): return "BlueZ call failed: \(why)"
        }
    }

    init(_ f: DBusFailure) {
        switch f {
        case let .busUnavailable(why): self = .busUnavailable(why)
        case _ where f.isServiceUnknown: self = .daemonNotRunning
        case .call(name: "org.freedesktop.DBus.Error.NoReply", _), .call(name: "org.freedesktop.DBus.Error.Timeout", _): self = .noAnswer
        default: self = .call(f.description)
        }
    }
}

/// One adapter as bluetoothd reports it (`org.bluez.Adapter1`).
public struct BlueZAdapter: Equatable, Sendable {
    /// The object path, e.g. `/org/bluez/hci0`.
    public let path: String
    /// The kernel name, e.g. `hci0`.
    public var name: String { String(path.split(separator: "/").last ?? "") }
    /// The controller address, `AA:BB:CC:DD:EE:FF`.
    public let address: String
    /// Whether the adapter is powered on (`Powered`).
    public let powered: Bool
}

/// Reads bluetoothd's state over D-Bus (`org.freedesktop.DBus.ObjectManager` at `/`).
enum BlueZObjects {
    static let service = "org.bluez"

    /// All managed objects: path → interface → properties. bluetoothd has `timeoutMillis` to
    /// answer.
    static func managedObjects(_ bus: DBusConnection, timeoutMillis: Int32 = 5000) throws -> [String: [String: [String: DBusValue]]] {
        do {
            guard try bus.nameHasOwner(service) else { throw BlueZError.daemonNotRunning }
            let reply = try bus.call(service, "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", timeoutMillis: timeoutMillis)
            var out: [String: [String: [String: DBusValue]]] = [:]
            for (path, ifaces) in reply.first?.dictionary ?? [:] {
                out[path] = ifaces.dictionary.mapValues(\.dictionary)
            }
            return out
        } catch let f as DBusFailure {
            throw BlueZError(f)
        }
    }

    /// The adapters, sorted by path.
    static func adapters(_ bus: DBusConnection, timeoutMillis: Int32 = 5000) throws -> [BlueZAdapter] {
        try managedObjects(bus, timeoutMillis: timeoutMillis).compactMap { path, ifaces -> BlueZAdapter? in
            guard let a = ifaces["org.bluez.Adapter1"] else { return nil }
            return BlueZAdapter(path: path, address: a["Address"]?.string ?? "", powered: a["Powered"]?.bool ?? false)
        }.sorted { $0.path < $1.path }
    }

    /// The adapter called `name`, or the first powered one (else the first one) when nil.
    static func choose(_ name: String?, from adapters: [BlueZAdapter]) throws -> BlueZAdapter {
        if let name {
            guard let a = adapters.first(where: { $0.name == name }) else { throw BlueZError.noAdapter(name) }
            return a
        }
        guard let a = adapters.first(where: \.powered) ?? adapters.first else { throw BlueZError.noAdapter(nil) }
        return a
    }
}

/// A one-shot look at bluetoothd for diagnostics: is it on the bus, which adapters, powered?
public enum BlueZProbe {
    /// The adapters bluetoothd knows; throws `BlueZError` when the bus or the daemon is missing.
    /// `busAddress` nil means the system bus. A running bluetoothd gets libdbus's usual 25 s to
    /// answer: a busy one (just started, many controllers, a loaded machine) is slow, not gone,
    /// and a command is better waiting than refusing Bluetooth.
    public static func adapters(busAddress: String? = nil) throws -> [BlueZAdapter] {
        let bus: DBusConnection
        do { bus = try DBusConnection(address: busAddress) } catch let f as DBusFailure { throw BlueZError(f) }
        return try BlueZObjects.adapters(bus, timeoutMillis: 25_000)
    }
}
