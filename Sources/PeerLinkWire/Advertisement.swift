/// What a node publishes in DNS-SD TXT records: identity, display name, protocol version
/// and the application's discovery info. Framework keys start with `_`:
/// `_id` (peer ID), `_dn` (display name), `_pv` (protocol major version).
public struct Advertisement: Hashable, Sendable {
    public var peerID: PeerID
    public var displayName: String
    public var protocolVersion: Int
    public var info: DiscoveryInfo

    public static let keyPeerID = "_id"
    public static let keyDisplayName = "_dn"
    public static let keyProtocol = "_pv"
    public static let maxDisplayNameBytes = 63

    public init(peerID: PeerID, displayName: String, protocolVersion: Int = PeerLinkProtocol.major, info: DiscoveryInfo) throws {
        try Advertisement.validate(displayName: displayName)
        self.peerID = peerID
        self.displayName = displayName
        self.protocolVersion = protocolVersion
        self.info = info
    }

    public static func validate(displayName: String) throws {
        let n = displayName.utf8.count
        guard n > 0 else { throw WireError.invalid(field: "display name", reason: "it is empty") }
        guard n <= maxDisplayNameBytes else {
            throw WireError.limitExceeded(field: "display name in bytes", value: n, limit: maxDisplayNameBytes)
        }
        guard !displayName.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw WireError.invalid(field: "display name", reason: "it contains control characters")
        }
    }

    /// The TXT dictionary to publish.
    public var txt: [String: String] {
        var d = info.entries
        d[Advertisement.keyPeerID] = peerID.description
        d[Advertisement.keyDisplayName] = displayName
        d[Advertisement.keyProtocol] = String(protocolVersion)
        return d
    }

    /// Reads an advertisement from a TXT dictionary as found on the network. Unknown
    /// framework keys (other `_` keys) are ignored so later versions can add some.
    public init(txt raw: [String: String]) throws {
        // DNS-SD keys are case-insensitive: read framework keys in any case.
        var txt: [String: String] = [:]
        for (k, v) in raw { txt[k.hasPrefix("_") ? k.lowercased() : k] = v }
        guard let id = txt[Advertisement.keyPeerID] else {
            throw WireError.invalid(field: "advertisement", reason: "no \(Advertisement.keyPeerID) (peer ID) key")
        }
        guard let name = txt[Advertisement.keyDisplayName] else {
            throw WireError.invalid(field: "advertisement", reason: "no \(Advertisement.keyDisplayName) (display name) key")
        }
        guard let pvText = txt[Advertisement.keyProtocol], let pv = Int(pvText), pv > 0, pv < 1000 else {
            throw WireError.invalid(field: "advertisement", reason: "missing or bad \(Advertisement.keyProtocol) (protocol version)")
        }
        var app: [String: String] = [:]
        for (k, v) in txt where !k.hasPrefix("_") { app[k] = v }
        try self.init(peerID: try PeerID(parsing: id), displayName: name, protocolVersion: pv, info: try DiscoveryInfo(app))
    }
}

/// Protocol version constants shared by every medium.
public enum PeerLinkProtocol {
    /// Major version: carried in the Noise prologue (`peerlink/1`) and the `_pv` TXT key.
    public static let major = 1
    /// Minor version: carried in the hello; peers use the smaller of the two. Minor 1 adds
    /// RESOURCE_ERROR (docs/PROTOCOL.md §9.9), minor 2 link-level pieces (§6.3), minor 3 the
    /// receiver's margin in a no-space RESOURCE_ERROR (code 04), minor 4 keyed offers whose
    /// SHA-256 follows the data (RESOURCE_OFFER_KEYED, RESOURCE_DIGEST).
    public static let minor = 4
    /// The Noise prologue bytes.
    public static let prologue: [UInt8] = Array("peerlink/\(major)".utf8)
}
