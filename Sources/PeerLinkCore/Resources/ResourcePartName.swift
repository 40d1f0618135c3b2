import Crypto
import PeerLinkWire

/// The name of the partial file a receiver keeps a resource's bytes in until they verify
/// (PROTOCOL §11.7). It names the content, never the offered name, so a later offer of the
/// same content resumes from it and an offer of other content starts a file of its own.
package enum ResourcePartName {
    /// An offer that carries its SHA-256: the digest as 64 lowercase hex digits.
    package static func forDigest(_ sha256: [UInt8]) -> String { hex(sha256) + ".part" }

    /// A keyed offer (its SHA-256 follows the bytes): the SHA-256 of the sending peer's ID and
    /// its content key, so one peer's key never names bytes another peer sent. The `key-`
    /// prefix keeps these apart from digest-named files.
    package static func forKey(_ key: [UInt8], from peer: PeerID) -> String {
        var h = SHA256()
        h.update(data: Array("peerlink/part-key".utf8))
        h.update(data: peer.bytes)
        h.update(data: key)
        return "key-" + hex(Array(h.finalize())) + ".part"
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0x0f)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
