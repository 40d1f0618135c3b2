import Foundation
import PeerLink
import PeerLinkDBus

/// One D-Bus connection to wpa_supplicant (`fi.w1.wpa_supplicant1`): blocking calls with
/// errors a user can act on, and every signal it sends handed to `signals`. Blocking: use it
/// from a dedicated queue, never from a Swift concurrency thread or an actor.
final class WPASupplicantBus: @unchecked Sendable {
    static let service = "fi.w1.wpa_supplicant1"
    static let rootPath = "/fi/w1/wpa_supplicant1"
    static let interfaceAPI = "fi.w1.wpa_supplicant1.Interface"
    static let p2pAPI = "fi.w1.wpa_supplicant1.Interface.P2PDevice"
    static let groupAPI = "fi.w1.wpa_supplicant1.Group"
    static let bssAPI = "fi.w1.wpa_supplicant1.BSS"
    static let propertiesAPI = "org.freedesktop.DBus.Properties"

    private let server: DBusObjectServer
    let signals = WPASignalHub()

    /// Connects to the bus at `address` (nil: the system bus) and subscribes to
    /// wpa_supplicant's signals and to its name's owner changes.
    init(address: String?) throws {
        do {
            server = try DBusObjectServer(address: address)
        } catch let f as DBusFailure {
            throw WiFiError(f, method: "connect")
        }
        let hub = signals
        let handler: DBusObjectServer.SignalHandler = { path, interface, member, args in
            hub.deliver(WPASignal(path: path, interface: interface, member: member, args: args))
        }
        do {
            try server.addMatch("type='signal',sender='\(Self.service)'", handler: handler)
            try server.addMatch("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.service)'", handler: handler)
        } catch let f as DBusFailure {
            throw WiFiError(f, method: "AddMatch")
        }
    }

    deinit { server.stop() }

    var isDisconnected: Bool { server.isDisconnected }

    /// A method call to wpa_supplicant (or, with `destination`, another service on the same bus).
    func call(_ path: String, _ interface: String, _ method: String, _ args: [DBusValue] = [],
              destination: String = service, timeoutMillis: Int = 10_000) throws -> [DBusValue] {
        do {
            return try server.call(destination, path, interface, method, args, timeoutMillis: timeoutMillis)
        } catch let f as DBusFailure {
            throw WiFiError(f, method: method)
        }
    }

    /// The D-Bus error name of a failed call, for the cases a caller handles itself.
    static func errorName(_ e: Error) -> String? {
        guard case let WiFiError.call(_, name, _) = e else { return nil }
        return name
    }

    func getAll(_ path: String, _ interface: String, destination: String = service) throws -> [String: DBusValue] {
        let r = try call(path, Self.propertiesAPI, "GetAll", [.string(interface)], destination: destination)
        guard let d = r.first.flatMap({ WPAProperties.dictionary($0) }) else {
            throw WiFiError.malformedReply("GetAll(\(interface)) on \(path) did not return a dictionary")
        }
        return d
    }

    func get(_ path: String, _ interface: String, _ name: String, destination: String = service) throws -> DBusValue {
        let r = try call(path, Self.propertiesAPI, "Get", [.string(interface), .string(name)], destination: destination)
        guard let v = r.first else { throw WiFiError.malformedReply("Get(\(interface).\(name)) on \(path) returned nothing") }
        return v.unwrapped
    }

    func set(_ path: String, _ interface: String, _ name: String, _ value: DBusValue) throws {
        _ = try call(path, Self.propertiesAPI, "Set", [.string(interface), .string(name), .variant(value)])
    }

    /// Whether `name` (by default wpa_supplicant) is on the bus. Never starts it: a bus that
    /// could activate it on demand is not asked to.
    func hasOwner(_ name: String = service) throws -> Bool {
        let r = try call("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", [.string(name)],
                         destination: "org.freedesktop.DBus")
        return r.first?.bool ?? false
    }

    /// The process id of wpa_supplicant on this bus (nil when the bus does not say).
    func ownerPID() -> Int32? {
        guard let r = try? call("/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID", [.string(Self.service)],
                                destination: "org.freedesktop.DBus"),
              case let .uint32(pid)? = r.first?.unwrapped else { return nil }
        return Int32(exactly: pid)
    }

    /// Throws `unsupported` when NetworkManager manages `radio`: it would take down any group
    /// PeerLink starts there (`NetworkManagerStatus.groupsRemoved`), and it adds the radio to
    /// wpa_supplicant itself.
    func requireNotNetworkManagers(_ radio: String) throws {
        if NetworkManagerProbe.status(of: radio, bus: self).manages {
            throw WiFiError.unsupported(interface: radio,
                                        why: NetworkManagerStatus.groupsRemoved(radio) + "; " + NetworkManagerStatus.groupsRemovedFix(radio))
        }
    }

    /// Throws `unsupported` when a program other than this wpa_supplicant drives `radio`
    /// (`OtherSupplicant`): call before `createInterface`, which would cut that program's
    /// Wi-Fi even when it fails.
    func requireNoOtherDriver(_ radio: String) throws {
        if let other = OtherSupplicantScan.find(radio, excludingPID: ownerPID()) {
            throw WiFiError.unsupported(interface: radio, why: other.why(radio) + "; " + other.fix(radio))
        }
    }

    /// The object path of the interface wpa_supplicant manages under that name, nil when it
    /// manages none.
    func interfacePath(_ ifname: String) throws -> String? {
        do {
            let r = try call(Self.rootPath, Self.service, "GetInterface", [.string(ifname)])
            guard let p = WPAProperties.text(r.first) else { throw WiFiError.malformedReply("GetInterface returned no path") }
            return p
        } catch let e where Self.errorName(e) == "fi.w1.wpa_supplicant1.InterfaceUnknown" {
            return nil
        }
    }

    /// Adds `ifname` to wpa_supplicant (as NetworkManager does) and returns its path.
    func createInterface(_ ifname: String) throws -> String {
        let args = DBusValue.propertyDictionary(["Ifname": .string(ifname)])
        let r = try call(Self.rootPath, Self.service, "CreateInterface", [args], timeoutMillis: 20_000)
        guard let p = WPAProperties.text(r.first) else { throw WiFiError.malformedReply("CreateInterface returned no path") }
        return p
    }

    func removeInterface(_ path: String) throws {
        _ = try call(Self.rootPath, Self.service, "RemoveInterface", [.objectPath(path)])
    }

    /// Object paths of every interface wpa_supplicant manages.
    func interfacePaths() throws -> [String] {
        let v = try get(Self.rootPath, Self.service, "Interfaces")
        guard let paths = WPAProperties.objectPaths(v) ?? (v == .array([]) ? [] : nil) else {
            throw WiFiError.malformedReply("Interfaces is not an object path array")
        }
        return paths
    }

    /// A P2P group's properties. wpa_supplicant 2.10 fails `GetAll` on a client's group
    /// ("No readable properties": its Frequency getter fails there), so on `InvalidArgs`
    /// each property is read alone and the unreadable ones are left out.
    func groupProperties(_ path: String) throws -> [String: DBusValue] {
        do {
            return try getAll(path, Self.groupAPI)
        } catch let e where Self.errorName(e) == "org.freedesktop.DBus.Error.InvalidArgs" {
            var out: [String: DBusValue] = [:]
            for name in ["Role", "SSID", "BSSID", "Frequency", "Passphrase"] {
                if let v = try? get(path, Self.groupAPI, name) { out[name] = v }
            }
            return out
        }
    }

    /// The BSSID of the access point (or group owner) the interface is associated with,
    /// nil when it is not or wpa_supplicant does not say.
    func currentBSSID(_ interfacePath: String) -> MACAddress? {
        guard let bss = WPAProperties.text(try? get(interfacePath, Self.interfaceAPI, "CurrentBSS")), bss != "/",
              let bytes = (try? get(bss, Self.bssAPI, "BSSID"))?.bytes else { return nil }
        return MACAddress(bytes: bytes)
    }

    func interfaceInfo(_ path: String) throws -> WPAInterfaceInfo {
        try WPAProperties.interface(getAll(path, Self.interfaceAPI))
    }
}
