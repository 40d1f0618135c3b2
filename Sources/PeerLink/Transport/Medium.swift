import PeerLinkCore

/// The kind of radio or network a link runs over.
public enum Medium: String, Sendable, Codable, CaseIterable {
    case tcp, udp, rfcomm, l2cap, memory

    /// True for Bluetooth media.
    public var isBluetooth: Bool { self == .rfcomm || self == .l2cap }
}

extension Medium {
    /// How the link policy classifies this medium.
    public var linkClass: LinkClass {
        switch self {
        case .tcp, .udp: return .ip
        case .rfcomm, .l2cap: return .bluetooth
        case .memory: return .other
        }
    }
}
