import PeerLink
import PeerLinkDBus
/// An interface as wpa_supplicant describes it (`fi.w1.wpa_supplicant1.Interface`).
struct WPAInterfaceInfo: Sendable, Equatable {
    var ifname: String
    var state: WPAState
    /// `Capabilities.Modes` ("infrastructure", "ad-hoc", "ap", "p2p", "mesh"); nil when absent.
    var modes: [String]?
}

/// A P2P group as wpa_supplicant describes it (`fi.w1.wpa_supplicant1.Group`).
struct WPAGroupInfo: Sendable, Equatable {
    var role: String
    var ssid: String
    var bssid: MACAddress
    /// nil when wpa_supplicant cannot say (its Frequency getter fails for a P2P client).
    var frequency: Int?
    /// Empty when wpa_supplicant does not know it (a client that joined without WPS).
    var passphrase: String
}

/// The argument of `P2PDevice.GroupStarted` and `GroupFinished`.
struct WPAGroupSignal: Sendable, Equatable {
    var interfaceObject: String
    var groupObject: String
    var role: String
}

/// Reads wpa_supplicant's property dictionaries and signal arguments. Pure: no I/O, so
/// malformed replies are tested on the host. Every reader throws `WiFiError.malformedReply`
/// naming what is missing or of the wrong type.
enum WPAProperties {
    /// Any D-Bus integer (wpa_supplicant uses q, i, u, n for different properties).
    static func int(_ value: DBusValue?) -> Int? {
        switch value?.unwrapped {
        case let .byte(x)?: return Int(x)
        case let .int16(x)?: return Int(x)
        case let .uint16(x)?: return Int(x)
        case let .int32(x)?: return Int(x)
        case let .uint32(x)?: return Int(x)
        case let .int64(x)?: return Int(exactly: x)
        case let .uint64(x)?: return Int(exactly: x)
        default: return nil
        }
    }

    /// A string-typed value (s or o), nil for any other type.
    static func text(_ value: DBusValue?) -> String? {
        switch value?.unwrapped {
        case let .string(s)?, let .objectPath(s)?: return s
        default: return nil
        }
    }

    /// An `as` array; nil when the value is not one.
    static func strings(_ value: DBusValue?) -> [String]? {
        guard let v = value?.unwrapped else { return nil }
        if case .emptyArray = v { return [] }
        guard case let .array(items) = v else { return nil }
        var out: [String] = []
        for i in items {
            guard case let .string(s) = i else { return nil }
            out.append(s)
        }
        return out
    }

    /// An `ao` array; nil when the value is not one.
    static func objectPaths(_ value: DBusValue?) -> [String]? {
        guard let v = value?.unwrapped else { return nil }
        guard case let .array(items) = v else { return nil }
        var out: [String] = []
        for i in items {
            guard case let .objectPath(p) = i else { return nil }
            out.append(p)
        }
        return out
    }

    /// An `a{sv}` dictionary; nil when the value is not one (an empty array counts as empty).
    static func dictionary(_ value: DBusValue?) -> [String: DBusValue]? {
        guard let v = value?.unwrapped else { return nil }
        guard case let .array(items) = v else { return nil }
        var out: [String: DBusValue] = [:]
        for item in items {
            guard case let .dictEntry(k, val) = item, case let .string(key) = k else { return nil }
            if out[key] == nil { out[key] = val }
        }
        return out
    }

    static func interface(_ props: [String: DBusValue]) throws -> WPAInterfaceInfo {
        guard let ifname = text(props["Ifname"]), !ifname.isEmpty else { throw WiFiError.malformedReply("interface without an Ifname") }
        guard let state = text(props["State"]) else { throw WiFiError.malformedReply("interface \(ifname) without a State") }
        var modes: [String]?
        if let caps = props["Capabilities"] {
            guard let c = dictionary(caps) else { throw WiFiError.malformedReply("Capabilities of \(ifname) is not a dictionary") }
            if let m = c["Modes"] {
                guard let list = strings(m) else { throw WiFiError.malformedReply("Capabilities.Modes of \(ifname) is not a string array") }
                modes = list
            }
        }
        return WPAInterfaceInfo(ifname: ifname, state: WPAState(text: state), modes: modes)
    }

    static func group(_ props: [String: DBusValue]) throws -> WPAGroupInfo {
        guard let role = text(props["Role"]) else { throw WiFiError.malformedReply("group without a Role") }
        guard let ssidBytes = props["SSID"]?.bytes, !ssidBytes.isEmpty else { throw WiFiError.malformedReply("group without an SSID") }
        guard let ssid = String(validating: ssidBytes, as: UTF8.self) else {
            throw WiFiError.malformedReply("group SSID is not UTF-8")
        }
        // An empty BSSID means "not known yet" (seen in the lab right after a group started),
        // and so does a missing one (the P2P client's getter failed in 2 of about 20 lab boots,
        // read property by property right after GroupStarted): it reads as zero, and callers
        // take it from the interface instead. Only a BSSID that is there and wrong is malformed.
        let bssid: MACAddress
        if let value = props["BSSID"] {
            guard let bytes = value.bytes, let b = bytes.isEmpty ? MACAddress.zero : MACAddress(bytes: bytes) else {
                throw WiFiError.malformedReply("group without a 6-byte BSSID")
            }
            bssid = b
        } else {
            bssid = .zero
        }
        var freq: Int?
        if let f = props["Frequency"] {
            guard let mhz = int(f), mhz > 0 else { throw WiFiError.malformedReply("group Frequency is not a positive integer") }
            freq = mhz
        }
        let passphrase: String
        switch props["Passphrase"] {
        case nil: passphrase = ""
        case let v?:
            guard let p = text(v) else { throw WiFiError.malformedReply("group Passphrase is not a string") }
            passphrase = p
        }
        return WPAGroupInfo(role: role, ssid: ssid, bssid: bssid, frequency: freq, passphrase: passphrase)
    }

    /// `GroupStarted(a{sv})` / `GroupFinished(a{sv})`.
    static func groupSignal(_ args: [DBusValue]) throws -> WPAGroupSignal {
        guard args.count == 1, let d = dictionary(args[0]) else { throw WiFiError.malformedReply("group signal without its dictionary") }
        guard let iface = text(d["interface_object"]) else { throw WiFiError.malformedReply("group signal without interface_object") }
        guard let group = text(d["group_object"]) else { throw WiFiError.malformedReply("group signal without group_object") }
        guard let role = text(d["role"]) else { throw WiFiError.malformedReply("group signal without role") }
        return WPAGroupSignal(interfaceObject: iface, groupObject: group, role: role)
    }

    /// The new `State` in an interface's `PropertiesChanged(a{sv})`, nil when it has none.
    static func changedState(_ args: [DBusValue]) -> WPAState? {
        guard let d = args.first.flatMap({ dictionary($0) }), let s = text(d["State"]) else { return nil }
        return WPAState(text: s)
    }
}
