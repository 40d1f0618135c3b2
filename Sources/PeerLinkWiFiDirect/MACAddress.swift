import PeerLink
/// A 48-bit IEEE 802 address (a radio, a group owner's interface, a P2P device), written
/// `aa:bb:cc:dd:ee:ff` (lowercase).
public struct MACAddress: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The six bytes, most significant first.
    public let bytes: [UInt8]

    /// 00:00:00:00:00:00, a placeholder before an address is known.
    static let zero = MACAddress(six: [0, 0, 0, 0, 0, 0])

    private init(six: [UInt8]) { bytes = six }

    /// Six bytes, else nil.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 6 else { return nil }
        self.bytes = bytes
    }

    /// Parses `aa:bb:cc:dd:ee:ff` (either case); anything else gives nil.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard p.count == 2, p.allSatisfy(\.isHexDigit), let b = UInt8(p, radix: 16) else { return nil }
            out.append(b)
        }
        bytes = out
    }

    public var description: String { bytes.map { hex2($0) }.joined(separator: ":") }

    /// The form wpa_supplicant uses in object paths (`.../Peers/aabbccddeeff`).
    var pathComponent: String { bytes.map { hex2($0) }.joined() }

    /// All zeros (wpa_supplicant's "no address").
    var isZero: Bool { bytes.allSatisfy { $0 == 0 } }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let a = MACAddress(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a MAC address: \(text)"))
        }
        self = a
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}

private func hex2(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(b >> 4)], digits[Int(b & 0xf)]])
}
