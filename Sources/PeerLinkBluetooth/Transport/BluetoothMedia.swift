import PeerLink

extension Medium {
    /// Bluetooth BR/EDR RFCOMM.
    public static let rfcomm = register("rfcomm", traits: MediumTraits(linkClass: .bluetooth, typicalBytesPerSecond: 200_000, maxFrame: 8192, endpoint: .bluetoothAddress))
    /// Bluetooth L2CAP (BR/EDR, or LE credit-based channels).
    public static let l2cap = register("l2cap", traits: MediumTraits(linkClass: .bluetooth, typicalBytesPerSecond: 200_000, endpoint: .bluetoothAddress))
}
