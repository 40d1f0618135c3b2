import PeerLink
/// What a Wi-Fi radio's driver lets an interface be (nl80211's `enum nl80211_iftype`),
/// named as `iw list` names them.
public enum WiFiInterfaceType: UInt32, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// nl80211's type numbers: `adHoc` (IBSS), `station` (managed), `accessPoint`, `apVLAN`, `wds`,
    /// `monitor`, `meshPoint`.
    case adHoc = 1, station = 2, accessPoint = 3, apVLAN = 4, wds = 5, monitor = 6, meshPoint = 7
    /// `p2pClient` and `p2pGroupOwner` (a Wi-Fi Direct group's client and owner), `p2pDevice`
    /// (the P2P management interface), `ocb` (outside the context of a BSS), `nan` (neighbour
    /// awareness networking).
    case p2pClient = 8, p2pGroupOwner = 9, p2pDevice = 10, ocb = 11, nan = 12

    public var description: String {
        switch self {
        case .adHoc: "IBSS"
        case .station: "managed"
        case .accessPoint: "AP"
        case .apVLAN: "AP/VLAN"
        case .wds: "WDS"
        case .monitor: "monitor"
        case .meshPoint: "mesh point"
        case .p2pClient: "P2P-client"
        case .p2pGroupOwner: "P2P-GO"
        case .p2pDevice: "P2P-device"
        case .ocb: "outside context of a BSS"
        case .nan: "NAN"
        }
    }
}
