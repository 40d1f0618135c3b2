import PeerLink
import PeerLinkDBus
/// What an interface's `PropertiesChanged(a{sv})` says about a connection attempt: the new
/// `State` and the status and reason codes wpa_supplicant reports (nil: not in this signal).
struct WPAInterfaceChange: Sendable, Equatable {
    var state: WPAState?
    /// IEEE 802.11 reason code of the last disconnection; negative when this side
    /// disconnected (locally generated), positive when the other side did.
    var disconnectReason: Int?
    /// IEEE 802.11 status code of the last authentication (0: success).
    var authStatus: Int?
    /// IEEE 802.11 status code of the last (re)association (0: success).
    var assocStatus: Int?
}

extension WPAProperties {
    /// The fields of an interface's `PropertiesChanged` that concern a connection attempt;
    /// nil when the argument is not a dictionary. A field of the wrong type reads as absent.
    static func interfaceChange(_ args: [DBusValue]) -> WPAInterfaceChange? {
        guard let d = args.first.flatMap({ dictionary($0) }) else { return nil }
        return WPAInterfaceChange(state: text(d["State"]).map(WPAState.init(text:)), disconnectReason: int(d["DisconnectReason"]),
                                  authStatus: int(d["AuthStatusCode"]), assocStatus: int(d["AssocStatusCode"]))
    }

    /// The `status` of `GONegotiationFailure(a{sv})` or `InvitationResult(a{sv})`; nil when absent.
    static func p2pStatus(_ args: [DBusValue]) -> Int? {
        guard let d = args.first.flatMap({ dictionary($0) }) else { return nil }
        return int(d["status"])
    }

    /// The `config_error` of `WpsFailed(s name, a{sv} args)`; nil when absent.
    static func wpsConfigError(_ args: [DBusValue]) -> Int? {
        guard args.count >= 2, let d = dictionary(args[1]) else { return nil }
        return int(d["config_error"])
    }

    /// `InterfaceAdded(o path, a{sv} properties)`: the new interface's path and name.
    static func interfaceAdded(_ args: [DBusValue]) -> (path: String, ifname: String)? {
        guard args.count >= 2, let path = text(args[0]), let d = dictionary(args[1]), let name = text(d["Ifname"]) else { return nil }
        return (path, name)
    }
}
