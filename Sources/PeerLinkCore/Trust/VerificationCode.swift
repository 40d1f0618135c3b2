import Crypto
import PeerLinkWire

/// The code two people compare to be sure each device holds the other's real key, as with
/// Signal's safety numbers: both devices compute it from the two peer IDs, so it is the same
/// on both sides and on every radio, and it changes if either key does. A peer ID commits to
/// its static key (the first 20 bytes of the key's SHA-256) and every link proves possession
/// of that key in its handshake, so equal codes mean no one sits between the two.
///
/// Thirty decimal digits in six groups of five: SHA-256 over the label and the two peer IDs'
/// bytes in ascending order; each group is five bytes of the digest, big-endian, modulo
/// 100 000 (docs/PROTOCOL.md §16.7 has a vector).
public struct VerificationCode: Sendable, Hashable, CustomStringConvertible {
    /// Domain separation: the label hashed first.
    public static let label = Array("peerlink verification code v1".utf8)

    /// The six five-digit groups.
    public let groups: [String]

    /// The code between `a` and `b`; the order of the two does not matter.
    public init(_ a: PeerID, _ b: PeerID) {
        let (low, high) = a <= b ? (a, b) : (b, a)
        var hash = SHA256()
        hash.update(data: Self.label)
        hash.update(data: low.bytes)
        hash.update(data: high.bytes)
        let digest = Array(hash.finalize())
        groups = (0..<6).map { g in
            let value = digest[g * 5..<g * 5 + 5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let text = String(value % 100_000)
            return String(repeating: "0", count: 5 - text.count) + text
        }
    }

    /// "12345 67890 …": the groups separated by spaces.
    public var description: String { groups.joined(separator: " ") }
}
