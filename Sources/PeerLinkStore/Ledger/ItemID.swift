#if canImport(Glibc)
import Glibc
#endif

/// An item's identity, chosen by its sender: 16 random bytes, written as 32 lowercase hex
/// characters in file names and JSON. The receiver keys its records by it, so an item offered
/// twice is recognised.
public struct ItemID: Hashable, Comparable, Sendable, CustomStringConvertible, Codable {
    /// The length of an ID in bytes: 16.
    public static let byteCount = 16
    /// The ID's 16 bytes.
    public let bytes: [UInt8]

    /// Wraps exactly 16 bytes; nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == ItemID.byteCount else { return nil }
        self.bytes = bytes
    }

    /// Parses 32 hex characters (either case); nil for anything else.
    public init?(hex: String) {
        let chars = Array(hex.utf8)
        guard chars.count == 2 * ItemID.byteCount else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(ItemID.byteCount)
        for i in stride(from: 0, to: chars.count, by: 2) {
            guard let hi = ItemID.nibble(chars[i]), let lo = ItemID.nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
        }
        bytes = out
    }

    /// A fresh ID from the system's random source.
    public static func random() -> ItemID {
        var g = SystemRandomNumberGenerator()
        return random(using: &g)
    }

    /// A fresh ID from `g` (16 bytes from two of its 64-bit outputs); tests pass a seeded
    /// generator to get the same IDs each run.
    public static func random<G: RandomNumberGenerator>(using g: inout G) -> ItemID {
        var out: [UInt8] = []
        for _ in 0..<2 { withUnsafeBytes(of: g.next()) { out.append(contentsOf: $0) } }
        return ItemID(checked: out)
    }

    private init(checked: [UInt8]) { bytes = checked }

    public var description: String { ContentDigest.hex(bytes) }

    public static func < (a: ItemID, b: ItemID) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = ItemID(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "'\(text.prefix(40))' is not an item ID (32 hex characters)"))
        }
        self = id
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

import Crypto
import PeerLinkWire

extension ItemID {
    /// The key a receiver records item `id` of `sender` under: the first 16 bytes of
    /// SHA-256 over both. Item IDs are chosen by their senders, so one peer could announce
    /// another's ID; scoped by the sender's peer ID (its key), the same ID from two peers is two
    /// items, and no peer can make a receiver take another's item for a duplicate.
    public static func received(_ id: ItemID, from sender: PeerID) -> ItemID {
        var h = SHA256()
        h.update(data: Array("peerlink received item\0".utf8))
        h.update(data: Array(sender.description.utf8))
        h.update(data: id.bytes)
        return ItemID(checked: Array(h.finalize().prefix(byteCount)))
    }
}
