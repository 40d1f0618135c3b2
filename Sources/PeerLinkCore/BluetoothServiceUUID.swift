import Crypto
import PeerLinkWire

/// The 128-bit Bluetooth service UUID of a PeerLink service type (docs/PROTOCOL.md §14.1):
/// SHA-256 over the 16 ASCII bytes `PeerLink-BT-UUID` followed by the UTF-8 of
/// `peerlink/1/<service type>`, truncated to 16 bytes, with the RFC 9562 version 8 (custom)
/// and variant `10` bits set. The same service type gives the same UUID on every node.
package enum BluetoothServiceUUID {
    /// The fixed namespace prefixed to the hashed name.
    package static let namespace: [UInt8] = Array("PeerLink-BT-UUID".utf8)

    /// The UUID's 16 bytes in textual (big-endian) order.
    package static func bytes(for service: ServiceType) -> [UInt8] {
        var b = Array(SHA256.hash(data: namespace + Array("peerlink/1/\(service.name)".utf8)).prefix(16))
        b[6] = (b[6] & 0x0f) | 0x80
        b[8] = (b[8] & 0x3f) | 0x80
        return b
    }

    /// The lowercase 8-4-4-4-12 form BlueZ uses on D-Bus.
    package static func string(for service: ServiceType) -> String {
        let hex = bytes(for: service).map { b in String(b >> 4, radix: 16) + String(b & 0xf, radix: 16) }.joined()
        var s = "", i = hex.startIndex
        for n in [8, 4, 4, 4, 12] {
            let j = hex.index(i, offsetBy: n)
            s += (s.isEmpty ? "" : "-") + hex[i..<j]
            i = j
        }
        return s
    }
}
