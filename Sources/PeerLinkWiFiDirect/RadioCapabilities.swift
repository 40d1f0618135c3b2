import PeerLink
/// Whether a radio can do one thing, and if not, why and what to do.
public struct WiFiCapability: Sendable, Codable, Equatable {
    /// True when the radio can do it.
    public var available: Bool
    /// What was found, in a sentence.
    public var detail: String
    /// What to do when it cannot; nil when it can.
    public var fix: String?

    static func yes(_ detail: String) -> WiFiCapability { WiFiCapability(available: true, detail: detail, fix: nil) }
    static func no(_ detail: String, fix: String) -> WiFiCapability { WiFiCapability(available: false, detail: detail, fix: fix) }
}

/// What NetworkManager does with a radio.
public enum NetworkManagerStatus: Sendable, Equatable, Codable, CustomStringConvertible {
    /// NetworkManager is not on the bus.
    case notRunning
    /// NetworkManager runs and leaves the interface alone.
    case unmanaged
    /// NetworkManager manages the interface (its device state, e.g. "activated").
    case managed(state: String)
    /// NetworkManager runs but could not be asked (the reason).
    case unknown(String)

    public var description: String {
        switch self {
        case .notRunning: "NetworkManager is not running"
        case .unmanaged: "NetworkManager runs and leaves this interface unmanaged"
        case let .managed(state): "NetworkManager manages this interface (device state \(state))"
        case let .unknown(why): "NetworkManager runs; its view of this interface is unknown (\(why))"
        }
    }

    var manages: Bool { if case .managed = self { return true } else { return false } }

    /// Why Wi-Fi Direct cannot run on a radio NetworkManager manages. Measured in the lab
    /// (NetworkManager 1.42, as Debian 12 and Raspberry Pi OS Bookworm ship it): on every
    /// `GroupStarted` of the radio's P2P device that it did not ask for, NetworkManager logs
    /// "notified a group start but we are not trying to connect! Ignoring the event" and calls
    /// `RemoveInterface` on the group's interface 1–2 s later, so the group ends before a peer
    /// can use it.
    static func groupsRemoved(_ radio: String) -> String {
        "NetworkManager manages \(radio), and it takes down every Wi-Fi Direct group on \(radio) that it did not start itself (it removes the group's interface from wpa_supplicant 1–2 s after the group starts)"
    }

    /// What lets PeerLink use such a radio.
    static func groupsRemovedFix(_ radio: String) -> String {
        "on a node that needs no other Wi-Fi network on \(radio), take it from NetworkManager: `nmcli device set \(radio) managed no` (until NetworkManager restarts), or unmanaged-devices=interface-name:\(radio) in a file in /etc/NetworkManager/conf.d/ (docs/WIFI-DIRECT.md); or give PeerLink a second radio with --wifi"
    }
}

/// What PeerLink found out about one radio, the input of `RadioCapabilities.evaluate`.
struct RadioFacts: Sendable, Equatable {
    enum Supplicant: Sendable, Equatable {
        case busUnavailable(String)
        /// Running, but the bus's policy refuses this user's calls to it (the bus's words).
        case notAllowed(String)
        case notRunning
        /// Running, but the interface is not one of its interfaces (yet).
        case notManaging
        /// Running and managing it: `Capabilities.Modes` (nil if absent).
        case managing(modes: [String]?)
    }
    /// Where the kernel shows the P2P device of this machine's wpa_supplicant.
    enum P2PDevice: Sendable, Equatable {
        /// A P2P-device wdev on this radio.
        case thisRadio
        /// This wpa_supplicant's one P2P device is on other radios (their interface names).
        case otherRadios([String])
        /// No P2P-device wdev of this wpa_supplicant yet (it makes one when it adds the
        /// radio; drivers without one run P2P on the main interface).
        case none
        /// nl80211 could not be read.
        case unknown
    }

    var interface: String
    var phy: String?
    /// The kernel's supported interface types; nil when nl80211 could not be read.
    var kernelTypes: Set<WiFiInterfaceType>?
    var supplicant: Supplicant
    var p2pDevice: P2PDevice
    var networkManager: NetworkManagerStatus
    /// The driver's valid interface combinations; nil when it reports none or nl80211 could
    /// not be read.
    var combinations: [WiFiInterfaceCombination]? = nil
    /// Another program driving the radio (only looked for while `supplicant` is `notManaging`).
    var otherDriver: OtherSupplicant? = nil
}

/// Everything `peerlink doctor` and the upgrade need to know about one radio.
public struct WiFiRadioReport: Sendable, Codable, Equatable {
    /// The radio's own interface (`wlan0`).
    public var interface: String
    /// Its wiphy (`phy0`); nil when it could not be found.
    public var phy: String?
    /// As `iw list` names them; nil when the kernel could not be asked.
    public var kernelInterfaceTypes: [String]?
    /// The driver's valid interface combinations as `iw list` writes them; nil when none.
    public var interfaceCombinations: [String]?
    /// One line on wpa_supplicant and this interface.
    public var supplicant: String
    /// Whether wpa_supplicant is on the bus.
    public var supplicantRunning: Bool
    /// Whether this user may call it (D-Bus policy: root and group netdev on Debian).
    public var supplicantAllowed: Bool
    /// Whether wpa_supplicant manages the interface now (PeerLink adds it when it is not).
    public var managedBySupplicant: Bool
    /// What NetworkManager does with the interface.
    public var networkManager: NetworkManagerStatus
    /// Wi-Fi Direct: form a group as owner and join one as client.
    public var p2p: WiFiCapability
    /// A WPA2-PSK access point on the radio's own interface.
    public var softAP: WiFiCapability
}

/// The rules from facts to verdicts. Pure: every branch is tested on the host.
enum RadioCapabilities {
    static let permissionFix = "run PeerLink as root or as a member of group netdev (sudo usermod -aG netdev $USER, then log in again): wpa_supplicant's D-Bus policy (/etc/dbus-1/system.d/wpa_supplicant.conf) lets only those call it"

    static func refused(_ s: RadioFacts.Supplicant) -> Bool { if case .notAllowed = s { return true } else { return false } }

    static func evaluate(_ f: RadioFacts) -> WiFiRadioReport {
        let name = f.interface
        let types = f.kernelTypes
        let typeList = types.map { $0.sorted { $0.rawValue < $1.rawValue }.map(\.description) }
        let typeText = typeList.map { $0.joined(separator: ", ") } ?? "unknown"

        var supplicantLine: String
        var running = false, managed = false
        var modes: [String]?
        switch f.supplicant {
        case let .busUnavailable(why): supplicantLine = "D-Bus system bus unavailable (\(why))"
        case .notRunning: supplicantLine = "wpa_supplicant is not running (nothing owns fi.w1.wpa_supplicant1)"
        case let .notAllowed(why):
            running = true
            supplicantLine = "wpa_supplicant runs but refuses this user (\(why))"
        case .notManaging:
            running = true
            supplicantLine = f.otherDriver.map { "wpa_supplicant runs and does not manage \(name): \($0.why(name))" }
                ?? "wpa_supplicant runs and does not manage \(name) yet; PeerLink adds it (CreateInterface) while a session that may use Wi-Fi Direct runs"
        case let .managing(m):
            running = true; managed = true; modes = m
            supplicantLine = "wpa_supplicant manages \(name) (modes: \(m?.joined(separator: ", ") ?? "not reported"))"
        }

        // Wi-Fi Direct
        let p2p: WiFiCapability
        let driverP2P = types.map { $0.contains(.p2pClient) && $0.contains(.p2pGroupOwner) }
        let driverAP = types.map { $0.contains(.accessPoint) }
        let beside = Nl80211.groupBesideStation(f.combinations)
        if driverP2P == false {
            p2p = .no("the driver of \(name) (\(f.phy ?? "its phy")) does not offer P2P-GO and P2P-client interfaces (it offers: \(typeText))",
                      fix: "use a radio whose `iw list` shows P2P-GO and P2P-client under \"Supported interface modes\"")
        } else if beside == false, let combos = f.combinations {
            p2p = .no("the driver of \(name) lists P2P-GO and P2P-client, but none of its interface combinations lets a P2P group run beside \(name)'s station interface (\(combos.map(\.description).joined(separator: "; ")))",
                      fix: "use a radio whose `iw list` \"valid interface combinations\" put managed and P2P-GO/P2P-client together, or the soft-AP fallback")
        } else if case let .busUnavailable(why) = f.supplicant {
            p2p = .no("cannot reach the D-Bus system bus (\(why))", fix: "start dbus (systemctl start dbus)")
        } else if case let .notAllowed(why) = f.supplicant {
            p2p = .no("this user may not call wpa_supplicant (\(why))", fix: Self.permissionFix)
        } else if f.supplicant == .notRunning {
            p2p = .no("wpa_supplicant is not running on D-Bus; PeerLink forms groups through it",
                      fix: "apt-get install wpasupplicant, then systemctl start wpa_supplicant (it must run with -u, as the packaged service does)")
        } else if let other = f.otherDriver {
            p2p = .no(other.why(name), fix: other.fix(name))
        } else if f.networkManager.manages {
            p2p = .no(NetworkManagerStatus.groupsRemoved(name), fix: NetworkManagerStatus.groupsRemovedFix(name))
        } else if let m = modes, !m.contains("p2p") {
            p2p = .no("wpa_supplicant manages \(name) without P2P (its Capabilities.Modes are \(m.joined(separator: ", "))): P2P is disabled in its configuration (p2p_disabled=1) or not built in",
                      fix: "remove p2p_disabled=1 from the wpa_supplicant configuration of \(name) and restart wpa_supplicant, or use the soft-AP fallback")
        } else if case let .otherRadios(others) = f.p2pDevice {
            p2p = .no("wpa_supplicant runs one P2P device per process and it is on \(others.joined(separator: ", ")), not \(name)",
                      fix: "use --wifi \(others.first ?? "that radio") for Wi-Fi Direct")
        } else {
            let how = managed ? "through wpa_supplicant's P2P device" : "once PeerLink adds \(name) to wpa_supplicant"
            let note = driverP2P == nil ? " (driver capabilities unknown: nl80211 unreadable)"
                : beside == nil ? " (the driver reports no interface combinations: a group may take \(name)'s place)" : ""
            p2p = .yes("ready: can form and join Wi-Fi Direct groups \(how)\(note)")
        }

        // Soft-AP
        let softAP: WiFiCapability
        if driverAP == false {
            softAP = .no("the driver of \(name) does not offer AP mode (it offers: \(typeText))",
                         fix: "use a radio whose `iw list` shows AP under \"Supported interface modes\"")
        } else if case let .busUnavailable(why) = f.supplicant {
            softAP = .no("cannot reach the D-Bus system bus (\(why))", fix: "start dbus (systemctl start dbus)")
        } else if case let .notAllowed(why) = f.supplicant {
            softAP = .no("this user may not call wpa_supplicant (\(why))", fix: Self.permissionFix)
        } else if f.supplicant == .notRunning {
            softAP = .no("wpa_supplicant is not running on D-Bus", fix: "systemctl start wpa_supplicant")
        } else if let other = f.otherDriver {
            softAP = .no(other.why(name), fix: other.fix(name))
        } else if let m = modes, !m.contains("ap") {
            softAP = .no("wpa_supplicant cannot run an access point on \(name) (modes: \(m.joined(separator: ", ")))",
                         fix: "use a wpa_supplicant built with AP support (Debian's is) and a driver with AP mode")
        } else if f.networkManager.manages {
            softAP = .no("NetworkManager manages \(name); a soft-AP would take the interface from it",
                         fix: "let NetworkManager run the hotspot (`nmcli device wifi hotspot`), or `nmcli device set \(name) managed no` on a node that needs no other Wi-Fi")
        } else {
            softAP = .yes("ready: can run a WPA2-PSK access point on \(name) (it leaves any network \(name) is on while the AP runs)")
        }

        return WiFiRadioReport(interface: name, phy: f.phy, kernelInterfaceTypes: typeList,
                               interfaceCombinations: f.combinations.map { $0.map(\.description) }, supplicant: supplicantLine,
                               supplicantRunning: running, supplicantAllowed: !Self.refused(f.supplicant), managedBySupplicant: managed, networkManager: f.networkManager,
                               p2p: p2p, softAP: softAP)
    }
}
