import PeerLink
import PeerLinkDBus
/// Why a Wi-Fi Direct or soft-AP operation failed; each case reads as a sentence a user can
/// act on.
public enum WiFiError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No D-Bus bus at the address (nil: the system bus).
    case busUnavailable(String)
    /// The bus works but nothing owns `fi.w1.wpa_supplicant1`.
    case supplicantNotRunning
    /// wpa_supplicant runs but the bus's policy refuses this user's calls (the bus's words).
    case notPermitted(String)
    /// No network interface of that name, or it is not a Wi-Fi radio.
    case noSuchRadio(String)
    /// The machine has no Wi-Fi radio at all.
    case noRadio
    /// The radio (or wpa_supplicant for it) cannot do what was asked; the text says why.
    case unsupported(interface: String, why: String)
    /// Received or given credentials break a rule.
    case invalidCredentials(String)
    /// An argument is out of range (what and why).
    case invalidArgument(String)
    /// wpa_supplicant answered with something PeerLink cannot read.
    case malformedReply(String)
    /// A step did not finish in time (the step, the limit).
    case timedOut(step: String, after: Duration)
    /// wpa_supplicant reported a failure (the step and its words).
    case failed(step: String, why: String)
    /// wpa_supplicant said the set-up failed, before its timeout (the step and why).
    case setupFailed(step: String, WiFiSetupFailure)
    /// A wpa_supplicant D-Bus call failed (method, D-Bus error name and message).
    case call(method: String, name: String, message: String)

    public var description: String {
        switch self {
        case let .busUnavailable(why):
            return "cannot reach the D-Bus system bus (\(why)); start dbus (systemctl start dbus)"
        case .supplicantNotRunning:
            return "wpa_supplicant is not running on D-Bus (nothing owns fi.w1.wpa_supplicant1); start it with `systemctl start wpa_supplicant` (Debian package wpasupplicant)"
        case let .notPermitted(why):
            return "this user may not call wpa_supplicant (\(why)); \(RadioCapabilities.permissionFix)"
        case let .noSuchRadio(name):
            return "\(name) is not a Wi-Fi radio on this machine (no /sys/class/net/\(name)/phy80211); `iw dev` lists the radios"
        case .noRadio:
            return "this machine has no Wi-Fi radio (nothing in /sys/class/net has phy80211); plug in a Wi-Fi adapter"
        case let .unsupported(interface, why):
            return "\(interface): \(why)"
        case let .invalidCredentials(why):
            return "invalid Wi-Fi group credentials: \(why)"
        case let .invalidArgument(why):
            return "invalid argument: \(why)"
        case let .malformedReply(what):
            return "unexpected reply from wpa_supplicant: \(what)"
        case let .timedOut(step, limit):
            return "Wi-Fi step '\(step)' did not finish within \(limit.inSeconds) s"
        case let .failed(step, why):
            return "Wi-Fi step '\(step)' failed: \(why)"
        case let .setupFailed(step, why):
            return "Wi-Fi step '\(step)' failed: \(why)"
        case let .call(method, name, message):
            return "wpa_supplicant \(method) failed: \(message.isEmpty ? name : "\(message) (\(name))")"
        }
    }

    /// Maps a D-Bus failure of `method` to the error a user can act on.
    init(_ f: DBusFailure, method: String) {
        switch f {
        case let .busUnavailable(why): self = .busUnavailable(why)
        case _ where f.isServiceUnknown: self = .supplicantNotRunning
        case let .call(name, message) where name == "org.freedesktop.DBus.Error.AccessDenied": self = .notPermitted(message)
        case let .call(name, message): self = .call(method: method, name: name, message: message)
        }
    }
}
