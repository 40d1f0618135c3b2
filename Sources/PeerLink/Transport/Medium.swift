/// The kind of radio or network a link runs over.
public enum Medium: String, Sendable, Codable, CaseIterable {
    case tcp, udp, rfcomm, l2cap, memory

    /// True for Bluetooth media.
    public var isBluetooth: Bool { self == .rfcomm || self == .l2cap }
}
