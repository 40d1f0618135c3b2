import PeerLink
/// What a peer needs to join a group this node formed (a Wi-Fi Direct group or a soft-AP).
/// It travels inside the Noise-secured session; `validate()` is the check for one received.
public struct WiFiCredentials: Sendable, Codable, Equatable {
    /// How the group was made, which decides how a peer joins it.
    public enum Kind: String, Sendable, Codable {
        /// An autonomous Wi-Fi Direct group (this node is its group owner).
        case p2pGroup = "p2p"
        /// A WPA2-PSK access point on the radio's own interface (no P2P).
        case softAP = "softap"
    }

    /// How the group was made: a P2P group or a soft-AP.
    public var kind: Kind
    /// The network name (1–32 printable ASCII characters; P2P groups are `DIRECT-…`).
    public var ssid: String
    /// WPA2 passphrase, 8–63 printable ASCII characters.
    public var passphrase: String
    /// Operating frequency in MHz (e.g. 2412 for channel 1).
    public var frequency: Int
    /// The group owner's (or access point's) interface address, the BSSID.
    public var bssid: MACAddress
    /// The group owner's P2P device address, when known: lets a joiner find the owner on
    /// `frequency` alone instead of scanning every channel.
    public var ownerDeviceAddress: MACAddress?

    /// Makes credentials; nothing is checked until `validate()`.
    public init(kind: Kind, ssid: String, passphrase: String, frequency: Int, bssid: MACAddress,
                ownerDeviceAddress: MACAddress? = nil) {
        self.kind = kind
        self.ssid = ssid
        self.passphrase = passphrase
        self.frequency = frequency
        self.bssid = bssid
        self.ownerDeviceAddress = ownerDeviceAddress
    }

    /// Throws `WiFiError.invalidCredentials` with the first rule broken. The rules are
    /// stricter than Wi-Fi's own (printable ASCII only) because the values are handed to
    /// wpa_supplicant as configuration strings.
    public func validate() throws {
        func bad(_ why: String) -> WiFiError { .invalidCredentials(why) }
        let ssidBytes = Array(ssid.utf8)
        guard (1...32).contains(ssidBytes.count) else { throw bad("the SSID must be 1–32 bytes, not \(ssidBytes.count)") }
        guard ssidBytes.allSatisfy(Self.isPrintableASCII) else { throw bad("the SSID must be printable ASCII") }
        let pass = Array(passphrase.utf8)
        guard (8...63).contains(pass.count) else { throw bad("the passphrase must be 8–63 characters, not \(pass.count)") }
        guard pass.allSatisfy(Self.isPrintableASCII) else { throw bad("the passphrase must be printable ASCII") }
        guard WiFiChannels.isValidFrequency(frequency) else { throw bad("\(frequency) MHz is not a Wi-Fi channel") }
        guard !bssid.isZero, bssid.bytes[0] & 1 == 0 else { throw bad("\(bssid) is not a unicast BSSID") }
        if let d = ownerDeviceAddress, d.isZero || d.bytes[0] & 1 != 0 {
            throw bad("\(d) is not a unicast device address")
        }
    }

    static func isPrintableASCII(_ b: UInt8) -> Bool { (0x20...0x7e).contains(b) }
}

/// Channel arithmetic for the bands wpa_supplicant can run a group on.
public enum WiFiChannels {
    /// Whether `mhz` is the centre of a 20 MHz channel in the 2.4, 5 or 6 GHz band.
    public static func isValidFrequency(_ mhz: Int) -> Bool {
        switch mhz {
        case 2412...2472: return (mhz - 2407) % 5 == 0
        case 2484: return true
        case 5160...5885: return (mhz - 5000) % 20 == 0 || (mhz >= 5745 && (mhz - 5745) % 20 == 0)
        case 5955...7115: return (mhz - 5955) % 20 == 0
        default: return false
        }
    }

    /// The channel number of a frequency (2437 → 6, 5180 → 36), nil when not a channel.
    public static func channel(ofFrequency mhz: Int) -> Int? {
        guard isValidFrequency(mhz) else { return nil }
        switch mhz {
        case 2484: return 14
        case ..<2500: return (mhz - 2407) / 5
        case ..<5900: return (mhz - 5000) / 5
        default: return (mhz - 5950) / 5
        }
    }
}
