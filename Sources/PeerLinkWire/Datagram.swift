/// The envelope of a PeerLink UDP datagram:
/// `magic u8 (0xD1) | path token (8 bytes) | nonce u64 | ciphertext (frame + 16-byte tag)`.
/// The token names the link the datagram belongs to; the nonce is the explicit ChaCha20-Poly1305
/// counter, checked against a replay window after authentication.
package struct DatagramEnvelope: Equatable, Sendable {
    package static let magic: UInt8 = 0xD1
    package static let headerLength = 17
    /// Largest datagram PeerLink sends (fits the IPv6 minimum MTU with headers to spare).
    package static let maxLength = 1200

    package var token: [UInt8]
    package var nonce: UInt64
    package var ciphertext: [UInt8]

    package init(token: [UInt8], nonce: UInt64, ciphertext: [UInt8]) {
        self.token = token; self.nonce = nonce; self.ciphertext = ciphertext
    }

    package func encode() -> [UInt8] {
        var w = WireWriter(capacity: DatagramEnvelope.headerLength + ciphertext.count)
        w.u8(DatagramEnvelope.magic); w.append(token); w.u64(nonce); w.append(ciphertext)
        return w.bytes
    }

    package static func decode(_ bytes: [UInt8]) throws -> DatagramEnvelope {
        guard bytes.count <= 65507 else { throw WireError.limitExceeded(field: "datagram size", value: bytes.count, limit: 65507) }
        var r = WireReader(bytes)
        let m = try r.u8("datagram magic")
        guard m == magic else { throw WireError.invalid(field: "datagram", reason: "not a PeerLink datagram (magic 0x\(String(m, radix: 16)))") }
        let token = try r.take(8, "datagram token")
        let nonce = try r.u64("datagram nonce")
        let ct = r.rest()
        guard ct.count >= 16 else { throw WireError.truncated(field: "datagram ciphertext", needed: 16, available: ct.count) }
        return DatagramEnvelope(token: token, nonce: nonce, ciphertext: ct)
    }
}
