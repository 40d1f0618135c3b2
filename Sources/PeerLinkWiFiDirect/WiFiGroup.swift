import Foundation
import PeerLink

/// This node's part in a group.
public enum WiFiRole: String, Sendable, Codable {
    /// Formed an autonomous Wi-Fi Direct group and owns it.
    case groupOwner = "go"
    /// Runs a WPA2-PSK access point on the radio's own interface (the fallback without P2P).
    case accessPoint = "ap"
    /// Joined a group as a P2P client (on a group interface of its own).
    case p2pClient = "p2p-client"
    /// Joined as a plain station on the radio's own interface.
    case station
}

/// How `joinGroup` reaches the group owner.
public enum WiFiJoinMethod: String, Sendable, Codable, CaseIterable {
    /// P2P client when both sides have P2P (the station interface stays free), else a station.
    case automatic
    /// A P2P client started from a persistent-group profile built from the credentials
    /// (`AddPersistentGroup` + `GroupAdd`), after a P2P find on the group's frequency when
    /// the owner's device address is known. No WPS exchange. Leaves the radio's own
    /// interface (and any network it is on) alone.
    case p2pClient = "p2p-client"
    /// A station network on the radio's own interface with `scan_freq` and `bssid` set.
    /// Fastest, but takes the interface off any network it was on until `leave`.
    case station
}

/// A step of forming or joining a group, for the timings a `WiFiGroup` carries.
public enum WiFiStep: String, Sendable, Codable {
    /// `CreateInterface`, when wpa_supplicant did not manage the radio yet.
    case addInterface = "add-interface"
    /// `P2PDevice.GroupAdd` until `GroupStarted` (group owner).
    case startGroup = "start-group"
    /// A P2P find on the group's frequency until the owner is seen.
    case findOwner = "find-owner"
    /// `AddPersistentGroup` + `GroupAdd` until `GroupStarted` (P2P client).
    case joinGroup = "join-group"
    /// `AddNetwork` + `SelectNetwork` until the state is `completed` (soft-AP or station).
    case connect
    /// The group interface's IPv6 link-local address becoming usable for sockets (DAD done, or
    /// at once where the machine makes optimistic addresses: `OptimisticDAD`).
    case linkLocal = "link-local"
}

/// How long one step took.
public struct WiFiStepTiming: Sendable, Codable, Equatable {
    /// The step timed.
    public var step: WiFiStep
    /// How long it took.
    public var duration: Duration
}

/// Identifies a group this `WiFiDirect` set up, for `leave` and `events`.
public struct WiFiGroupID: Sendable, Hashable, Codable, CustomStringConvertible {
    let raw: UUID
    init() { raw = UUID() }
    public var description: String { raw.uuidString.prefix(8).lowercased() }
}

/// A group this node formed or joined, with what the other side needs and how long each
/// step took.
public struct WiFiGroup: Sendable, Equatable {
    /// Names the group for `leave` and in `events`.
    public var id: WiFiGroupID
    /// What this node is in the group: owner, access point, P2P client or station.
    public var role: WiFiRole
    /// The interface that carries the group's traffic here: the group interface
    /// (`p2p-wlan0-0`) for P2P roles, the radio's own interface otherwise.
    public var interface: String
    /// The radio the group runs on (`wlan0`).
    public var radio: String
    /// For an owner or access point: what a peer needs to join. For a joiner: what it used.
    public var credentials: WiFiCredentials
    /// This side's IPv6 link-local address on `interface`, usable (DAD done, or optimistic).
    public var linkLocalAddress: String
    /// The join method used (joiners only).
    public var joinMethod: WiFiJoinMethod?
    /// How long each step of the set-up took, in the order they ran.
    public var timings: [WiFiStepTiming]
    /// Where the address stood in DAD when the group was handed out (hosts only).
    public var linkLocalState = LinkLocalState.usable

    /// `fe80::…%interface`: the address with the scope a local socket needs.
    public var scopedLinkLocalAddress: String { "\(linkLocalAddress)%\(interface)" }

    /// The sum of the steps.
    public var totalDuration: Duration { timings.reduce(.zero) { $0 + $1.duration } }
}

/// Where a group's link-local address stood in duplicate address detection when the group
/// was handed out.
public enum LinkLocalState: String, Sendable, Codable {
    /// Out of DAD: sockets may use it.
    case usable
    /// In DAD, optimistic (RFC 4429): the host may be dialled on it already.
    case optimistic
    /// In DAD, not optimistic: known, and reachable once DAD ends (about a second later). A
    /// host hands it out that early when asked (`formGroup(waitForDAD: false)`), since its
    /// joiner needs longer than that to join and dial.
    case inDAD = "in-dad"
}

/// Something that happened to a group after it was set up.
public enum WiFiGroupEvent: Sendable, Equatable {
    /// A peer joined (for an owner or access point; its address as wpa_supplicant gives it).
    case peerJoined(String)
    /// A peer left.
    case peerLeft(String)
    /// The group is gone; the stream ends after this.
    case ended(WiFiGroupEndReason)
}

/// Why a group ended.
public enum WiFiGroupEndReason: Sendable, Equatable, CustomStringConvertible {
    /// wpa_supplicant removed the P2P group (`GroupFinished`), e.g. the owner went away.
    case groupFinished
    /// The group's interface left wpa_supplicant (`InterfaceRemoved`).
    case interfaceRemoved
    /// The soft-AP or station link left `completed` (the new state).
    case disconnected(String)
    /// wpa_supplicant left the bus.
    case supplicantStopped
    /// `leave` was called.
    case left

    public var description: String {
        switch self {
        case .groupFinished: "wpa_supplicant ended the P2P group"
        case .interfaceRemoved: "the group's interface was removed"
        case let .disconnected(state): "the link left the completed state (now \(state))"
        case .supplicantStopped: "wpa_supplicant stopped"
        case .left: "left by this node"
        }
    }
}
