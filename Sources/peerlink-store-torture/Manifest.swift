import Foundation
import PeerLinkStore

/// The items of one torture directory, chosen from the seed at the first run and written
/// atomically before anything else, so every later run (and the test that checks the
/// directory) works from the same list.
struct Manifest: Codable {
    struct Item: Codable {
        var index: Int
        var id: ItemID
        var name: String
        var size: UInt64
        var priority: Int
        /// SHA-256 of the content, lowercase hex.
        var digest: String
        /// Enqueued with a time to live that has passed by the first expiry sweep.
        var expiring: Bool
    }

    var seed: UInt64
    var chunk: Int
    var items: [Item]

    static func make(seed: UInt64, count: Int, maxSize: Int, chunk: Int) -> Manifest {
        var rng = SplitMix(seed: seed)
        var items: [Item] = []
        for i in 0..<count {
            let id = ItemID.random(using: &rng)
            let size = Int(rng.next() % UInt64(maxSize)) + 1
            let content = Content.bytes(seed: seed, index: i, size: size)
            items.append(Item(index: i, id: id, name: "item-\(i).bin", size: UInt64(size),
                              priority: Int(rng.next() % 3), digest: ContentDigest.hex(ContentDigest.of(bytes: content)),
                              expiring: i % 7 == 3))
        }
        return Manifest(seed: seed, chunk: chunk, items: items)
    }
}

/// SplitMix64: the torture's only source of randomness, so a seed repeats a run's items.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The content of item `index`: the same bytes every time it is asked for.
enum Content {
    static func bytes(seed: UInt64, index: Int, size: Int) -> [UInt8] {
        var rng = SplitMix(seed: seed ^ (UInt64(index + 1) &* 0xD6E8_FEB8_6659_FD93))
        var out: [UInt8] = []
        out.reserveCapacity(size + 8)
        while out.count < size { withUnsafeBytes(of: rng.next()) { out.append(contentsOf: $0) } }
        return Array(out.prefix(size))
    }
}
