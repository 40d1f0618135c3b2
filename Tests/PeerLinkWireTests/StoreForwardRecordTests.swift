import PeerLinkWire
import TestKit
import XCTest

/// The store-and-forward service's records (PROTOCOL §16): round trips, refusals of
/// malformed input, and stream framing however the bytes are cut.
final class StoreForwardRecordTests: XCTestCase {
    let id = [UInt8](0..<16), digest = [UInt8](repeating: 0xab, count: 32)

    var samples: [StoreForwardRecord] {
        [
            .item(id: id, size: 1 << 20, digest: digest, expiresAt: 1_800_000_000_000, name: "survey.csv"),
            .have(id: id, size: 1 << 20, digest: digest, receivedAt: 1_790_000_000_000),
            .want(id: id),
            .refuse(id: id, reason: .quota, text: "quota: 4G of 4G held for this peer"),
            .refuse(id: id, reason: .expired, text: ""),
            .message(id: id, expiresAt: 1_800_000_000_000, bytes: Array("water level 1.2 m".utf8)),
            .message(id: id, expiresAt: 7, bytes: [UInt8](repeating: 0x5a, count: StoreForwardRecord.maxMessage)),
        ]
    }

    func testRecordsRoundTrip() throws {
        for r in samples { XCTAssertEqual(try StoreForwardRecord.decode(r.encoded()), r) }
    }

    func testMalformedRecordsAreRefused() {
        let item = samples[0].encoded()
        var unknown = item; unknown[0] = 9
        var badReason = samples[3].encoded(); badReason[17] = 0
        let cases: [[UInt8]] = [
            [], unknown, Array(item.dropLast()), item + [0], badReason,
            [3] + id.prefix(15),  // short id
            [1] + id + [UInt8](repeating: 0, count: 8 + 32 + 8) + [0, 0],  // empty name
            [UInt8](repeating: 1, count: StoreForwardRecord.maxLength + 1),
            [5] + id + [UInt8](repeating: 0, count: 8),  // an empty message
            [5] + id + [UInt8](repeating: 0, count: 8 + StoreForwardRecord.maxMessage + 1),
        ]
        for c in cases {
            XCTAssertThrowsError(try StoreForwardRecord.decode(c)) { XCTAssertTrue($0 is WireError, "\($0)") }
        }
    }

    func testTheStreamGivesTheSameRecordsHoweverItIsCut() throws {
        let stream = samples.flatMap { $0.framed() }
        var rng = seededGenerator(self)
        for _ in 0..<200 {
            var d = StoreForwardDeframer()
            var out: [StoreForwardRecord] = []
            var i = 0
            while i < stream.count {
                let n = Int.random(in: 1...40, using: &rng)
                d.append(Array(stream[i..<min(i + n, stream.count)]))
                i += n
                while let r = try d.next() { out.append(r) }
            }
            XCTAssertEqual(out, samples)
        }
    }

    func testAnOversizedLengthStopsTheStream() {
        var d = StoreForwardDeframer()
        let n = StoreForwardRecord.maxFramedLength + 1
        d.append([UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)])
        XCTAssertThrowsError(try d.next(), "a length over the largest record is refused before its bytes arrive")
    }
}
