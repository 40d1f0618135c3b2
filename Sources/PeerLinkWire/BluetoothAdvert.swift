/// The service data a node puts in its Bluetooth LE advertisement under the service's
/// 128-bit UUID (docs/PROTOCOL.md §14.2): 10 bytes, so that the Flags field (3 bytes) plus one
/// 128-bit Service Data field (18 + 10 bytes) fill the 31-byte legacy advertising PDU exactly.
///
/// It carries the protocol major version, the first 6 bytes of the peer ID (enough to match a
/// device to its mDNS record; the full ID is proved by the handshake) and where the node
/// listens: RFCOMM channel and L2CAP PSM, each 0 when absent.
package struct BluetoothAdvert: Equatable, Sendable {
    /// Encoded length in bytes.
    package static let byteCount = 10
    /// How many leading bytes of the peer ID the advert carries.
    package static let peerIDPrefixCount = 6

    /// The protocol major version (`1`).
    package let version: UInt8
    /// The first `peerIDPrefixCount` bytes of the advertising node's peer ID.
    package let peerIDPrefix: [UInt8]
    /// The RFCOMM channel (1–30) the node listens on, or nil.
    package let rfcommChannel: UInt8?
    /// The L2CAP PSM the node listens on, or nil.
    package let l2capPSM: UInt16?

    /// Builds an advert for `peerID`; throws if the channel or PSM is out of range.
    package init(version: UInt8 = 1, peerID: PeerID, rfcommChannel: UInt8?, l2capPSM: UInt16?) throws {
        try self.init(version: version, peerIDPrefix: Array(peerID.bytes.prefix(Self.peerIDPrefixCount)),
                      rfcommChannel: rfcommChannel, l2capPSM: l2capPSM)
    }

    /// Builds an advert from its fields, validated as `decode` validates them.
    package init(version: UInt8, peerIDPrefix: [UInt8], rfcommChannel: UInt8?, l2capPSM: UInt16?) throws {
        guard version != 0 else { throw WireError.invalid(field: "Bluetooth advert version", reason: "0 is not a protocol version") }
        guard peerIDPrefix.count == Self.peerIDPrefixCount else {
            throw WireError.invalid(field: "Bluetooth advert peer ID prefix", reason: "expected \(Self.peerIDPrefixCount) bytes, got \(peerIDPrefix.count)")
        }
        if let c = rfcommChannel, !(1...30).contains(c) {
            throw WireError.invalid(field: "Bluetooth advert RFCOMM channel", reason: "\(c) is outside 1-30")
        }
        if let p = l2capPSM, p == 0 || p & 1 == 0 || p & 0x100 != 0 {
            throw WireError.invalid(field: "Bluetooth advert L2CAP PSM", reason: "0x\(String(p, radix: 16)) is not a valid PSM (odd, lowest bit of the upper byte clear)")
        }
        guard rfcommChannel != nil || l2capPSM != nil else {
            throw WireError.invalid(field: "Bluetooth advert", reason: "neither an RFCOMM channel nor an L2CAP PSM")
        }
        self.version = version
        self.peerIDPrefix = peerIDPrefix
        self.rfcommChannel = rfcommChannel
        self.l2capPSM = l2capPSM
    }

    /// The 10 service-data bytes: version, peer ID prefix, channel, PSM (little-endian, as
    /// Bluetooth writes PSMs).
    package func encode() -> [UInt8] {
        let psm = l2capPSM ?? 0
        return [version] + peerIDPrefix + [rfcommChannel ?? 0, UInt8(psm & 0xff), UInt8(psm >> 8)]
    }

    /// Reads service data received over the air; anything but exactly the documented 10 bytes
    /// with valid fields is rejected with a `WireError`. A version other than 1 is accepted
    /// here (the caller decides whether it can talk to it).
    package static func decode(_ bytes: [UInt8]) throws -> BluetoothAdvert {
        guard bytes.count >= byteCount else {
            throw WireError.truncated(field: "Bluetooth advert", needed: byteCount, available: bytes.count)
        }
        guard bytes.count == byteCount else { throw WireError.trailingBytes(bytes.count - byteCount) }
        let channel = bytes[7]
        let psm = UInt16(bytes[8]) | UInt16(bytes[9]) << 8
        return try BluetoothAdvert(version: bytes[0], peerIDPrefix: Array(bytes[1...6]),
                                   rfcommChannel: channel == 0 ? nil : channel, l2capPSM: psm == 0 ? nil : psm)
    }

    /// Whether `peerID` starts with this advert's prefix.
    package func matches(_ peerID: PeerID) -> Bool { peerID.bytes.starts(with: peerIDPrefix) }
}
