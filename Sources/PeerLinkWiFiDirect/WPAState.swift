import PeerLink
/// wpa_supplicant's `fi.w1.wpa_supplicant1.Interface.State`, as a table of what each value
/// means for a group link.
enum WPAState: String, Sendable, Equatable, CaseIterable {
    case disconnected, interfaceDisabled = "interface_disabled", inactive, scanning, authenticating
    case associating, associated, fourWayHandshake = "4way_handshake", groupHandshake = "group_handshake"
    case completed, unknown

    /// Any text wpa_supplicant may send; values this table does not know map to `.unknown`.
    init(text: String) { self = WPAState(rawValue: text) ?? .unknown }

    /// Keys installed: the link carries data (for a soft-AP: the AP is up).
    var isConnected: Bool { self == .completed }

    /// On the way to `completed`; a join still in progress.
    var isConnecting: Bool {
        switch self {
        case .scanning, .authenticating, .associating, .associated, .fourWayHandshake, .groupHandshake: return true
        default: return false
        }
    }

    /// A state that, after `completed`, means the link is gone.
    var endsLink: Bool {
        switch self {
        case .disconnected, .interfaceDisabled, .inactive, .scanning: return true
        default: return false
        }
    }
}
