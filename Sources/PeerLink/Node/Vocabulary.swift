import PeerLinkCore
import PeerLinkWire

// The words of PeerLink's API that are defined below it, in the wire codecs and the sans-I/O
// core, named here so that `import PeerLink` is all an application needs. Everything else in
// those modules is PeerLink's own machinery.

/// A peer's identity on every medium: 32 base32 characters derived from its public key.
public typealias PeerID = PeerLinkWire.PeerID

/// An application's service name (MultipeerConnectivity's rules: 1–15 lowercase letters,
/// digits and hyphens); peers find each other only within one service.
public typealias ServiceType = PeerLinkWire.ServiceType

/// The key–value pairs an advertiser publishes beside its peer ID and name.
public typealias DiscoveryInfo = PeerLinkWire.DiscoveryInfo

/// What a node publishes: its peer ID, name, protocol version and discovery info. A
/// ``Discovery`` implementation hands it to its medium.
public typealias Advertisement = PeerLinkWire.Advertisement

/// Why bytes, a name or a record were rejected (an invalid service type, discovery info that
/// breaks the rules, a malformed frame).
public typealias WireError = PeerLinkWire.WireError

/// A node's long-term key pair; the peer ID is derived from its public key.
public typealias Identity = PeerLinkCore.Identity

/// The rules that choose which of a peer's links carries what (docs/LINK-POLICY.md).
public typealias LinkPolicy = PeerLinkCore.LinkPolicy

/// The link policy's preference (`LinkPolicy.Kind`: Bluetooth first, Wi-Fi first, lowest
/// latency, one class only), under a name that a module importing only PeerLink can use in
/// its own public declarations.
public typealias LinkPreference = PeerLinkCore.LinkPolicy.Kind

/// The kind of radio under a link, as far as the link policy cares.
public typealias LinkClass = PeerLinkCore.LinkClass

/// A link's number, unique within its node.
public typealias LinkID = PeerLinkCore.LinkID

/// A session's tunables: windows, keepalives, timeouts.
public typealias SessionConfig = PeerLinkCore.SessionConfig

/// One step of a faster link's negotiation (Wi-Fi Direct), as reported in a session's events.
public typealias UpgradeEvent = PeerLinkCore.UpgradeEvent

/// The code two owners compare to check that each device holds the other's real key.
public typealias VerificationCode = PeerLinkCore.VerificationCode

/// A QR code's modules (versions 1–10, byte mode), e.g. to show a peer ID for another device's
/// camera (`peerlink id --qr`).
public typealias QRCode = PeerLinkCore.QRCode

/// Sizes as PeerLink's messages write them ("1.5 MiB").
public typealias ByteCount = PeerLinkWire.ByteCount

/// What kind of traffic a link carries for a peer (control, reliable messages, bulk,
/// unreliable messages), as reported when the carrier changes.
public typealias LinkRole = PeerLinkCore.LinkRole

/// Why a link carries a role: the link policy's rule (Bluetooth first, fastest for bulk, …)
/// and what qualified it (an avoided class, loss above the limit, kept by hysteresis).
public typealias CarrierReason = PeerLinkCore.CarrierReason

/// Why the receiver refused or stopped a file (no space, disk full, write failed), with the
/// numbers it gave.
public typealias ResourceError = PeerLinkWire.ResourceError

/// The wire protocol's version numbers.
public typealias PeerLinkProtocol = PeerLinkWire.PeerLinkProtocol
