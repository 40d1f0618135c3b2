import PeerLink
/// Which signals concern a group, and what they mean. Pure.
enum WiFiGroupEvents {
    /// What identifies a group in wpa_supplicant's signals.
    struct Watch: Sendable, Equatable {
        var role: WiFiRole
        /// The radio's interface object.
        var radioPath: String
        /// The group interface object (P2P roles).
        var groupInterfacePath: String?
        /// The group object (P2P roles).
        var groupObject: String?
    }

    static func classify(_ s: WPASignal, _ w: Watch) -> WiFiGroupEvent? {
        if s.isSupplicantGone { return .ended(.supplicantStopped) }
        switch w.role {
        case .groupOwner, .p2pClient:
            if s.member == "GroupFinished", s.interface == WPASupplicantBus.p2pAPI,
               let g = try? WPAProperties.groupSignal(s.args), g.interfaceObject == w.groupInterfacePath {
                return .ended(.groupFinished)
            }
            if s.member == "InterfaceRemoved", s.interface == WPASupplicantBus.service,
               WPAProperties.text(s.args.first) == w.groupInterfacePath {
                return .ended(.interfaceRemoved)
            }
            if let g = w.groupObject, s.path == g, s.interface == WPASupplicantBus.groupAPI,
               let peer = WPAProperties.text(s.args.first) {
                let name = String(peer.split(separator: "/").last ?? Substring(peer))
                if s.member == "PeerJoined" { return .peerJoined(name) }
                if s.member == "PeerDisconnected" { return .peerLeft(name) }
            }
        case .accessPoint, .station:
            if s.member == "InterfaceRemoved", s.interface == WPASupplicantBus.service,
               WPAProperties.text(s.args.first) == w.radioPath {
                return .ended(.interfaceRemoved)
            }
            guard s.path == w.radioPath, s.interface == WPASupplicantBus.interfaceAPI else { return nil }
            if s.member == "PropertiesChanged", let st = WPAProperties.changedState(s.args), st.endsLink {
                return .ended(.disconnected(st.rawValue))
            }
            if w.role == .accessPoint, let mac = WPAProperties.text(s.args.first) {
                if s.member == "StaAuthorized" { return .peerJoined(mac) }
                if s.member == "StaDeauthorized" { return .peerLeft(mac) }
            }
        }
        return nil
    }
}
