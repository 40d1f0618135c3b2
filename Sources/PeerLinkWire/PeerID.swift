/// A peer's identity on every medium: the first 20 bytes of SHA-256 of its Curve25519 public
/// key, written as 32 lowercase base32 characters. Derive one with `PeerID(publicKey:)` in
/// PeerLinkCore; this type only holds and parses the textual form.
public struct PeerID: Hashable, Comparable, Sendable, CustomStringConvertible, Codable {
    /// The 20 bytes behind the text.
    public let bytes: [UInt8]

    public static let byteCount = 20
    public static let textLength = 32

    /// Wraps exactly 20 bytes.
    public init(bytes: [UInt8]) throws {
        guard bytes.count == PeerID.byteCount else {
            throw WireError.invalid(field: "peer ID", reason: "expected \(PeerID.byteCount) bytes, got \(bytes.count)")
        }
        self.bytes = bytes
    }

    /// Takes the first 20 bytes of a digest (SHA-256 in practice), which must be at least that long.
    public init(digest: [UInt8]) {
        precondition(digest.count >= PeerID.byteCount, "digest shorter than a peer ID")
        self.bytes = Array(digest.prefix(PeerID.byteCount))
    }

    /// Parses the 32-character form (case-insensitive).
    public init(parsing text: String) throws {
        guard text.utf8.count == PeerID.textLength, let raw = Base32.decode(text), raw.count == PeerID.byteCount else {
            throw WireError.invalid(field: "peer ID", reason: "'\(text.prefix(40))' is not 32 base32 characters (a-z, 2-7)")
        }
        self.bytes = raw
    }

    public var description: String { Base32.encode(bytes) }
    /// The first 8 characters, for display where space is short.
    public var short: String { String(description.prefix(8)) }

    public static func < (a: PeerID, b: PeerID) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    public init(from decoder: Decoder) throws {
        try self.init(parsing: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}
