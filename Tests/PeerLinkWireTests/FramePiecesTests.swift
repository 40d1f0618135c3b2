import XCTest
import DocVectors
import TestKit
@testable import PeerLinkWire

/// Link-level pieces (PROTOCOL §6.3): a frame split for a small link is joined back exactly;
/// pieces out of order, oversized or malformed are refused; random input never crashes.
final class FramePiecesTests: XCTestCase {
    func frame(_ n: Int, seed: UInt8 = 3) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } }

    func join(_ pieces: [[UInt8]]) throws -> [[UInt8]] {
        var j = PieceJoiner()
        return try pieces.compactMap { try j.accept($0) }
    }

    func testAFrameThatFitsIsSentWhole() throws {
        let f = frame(700)
        XCTAssertEqual(FramePieces.split(f, maxFrame: 700), [f])
        XCTAssertEqual(try join([f]), [f], "a frame that is not a piece passes through")
    }

    func testSplitAndJoinRoundTrip() throws {
        for (size, limit) in [(701, 700), (16_416, 584), (65_519, 4064), (5000, 66), (200, 0)] {
            let f = frame(size)
            let pieces = FramePieces.split(f, maxFrame: limit)
            if size > limit { XCTAssertGreaterThan(pieces.count, 1, "\(size) in \(limit)") }
            for p in pieces where size > limit {
                XCTAssertLessThanOrEqual(p.count, max(limit, FramePieces.overhead + 1))
                XCTAssertEqual(p.first, FramePieces.kind)
            }
            XCTAssertEqual(pieces.last?[1], size > limit ? 1 : pieces.last?[1])
            XCTAssertEqual(try join(pieces), [f], "\(size) bytes in pieces of \(limit)")
        }
    }

    func testTwoFramesInARowAndFramesBetween() throws {
        let a = frame(3000, seed: 1), b = frame(10, seed: 2), c = frame(2500, seed: 5)
        let stream = FramePieces.split(a, maxFrame: 600) + [b] + FramePieces.split(c, maxFrame: 600)
        XCTAssertEqual(try join(stream), [a, b, c])
    }

    func testRefusals() {
        let pieces = FramePieces.split(frame(3000), maxFrame: 600)
        // Another frame while a frame's pieces are being joined.
        XCTAssertThrowsError(try join([pieces[0], frame(10)])) { e in
            XCTAssertTrue("\(e)".contains("while pieces of another"), "\(e)")
        }
        XCTAssertThrowsError(try join([[FramePieces.kind, 1]]), "a piece with no bytes")
        XCTAssertThrowsError(try join([[FramePieces.kind]]), "a piece without its flag")
        XCTAssertThrowsError(try join([[FramePieces.kind, 2, 9]]), "a flag other than 0 or 1")
        // A hostile peer that never ends a frame is stopped at the largest frame.
        let endless = [UInt8](repeating: 7, count: 4000)
        var j = PieceJoiner()
        var thrown: Error?
        for _ in 0..<20 {
            do { _ = try j.accept([FramePieces.kind, 0] + endless) } catch { thrown = error; break }
        }
        guard case let .limitExceeded(field, _, limit)? = thrown as? WireError else { return XCTFail("\(String(describing: thrown))") }
        XCTAssertEqual(limit, WireLimits.frame)
        XCTAssertTrue(field.contains("pieces"))
    }

    /// Random sequences of pieces, whole frames and garbage: no crash, and whatever is joined
    /// stays within the largest frame. Seeded, so a failure repeats.
    func testFuzzedPieceStreams() {
        var rng = SplitMix64(seed: 0x9A_1E_CE5)
        var joined = 0, refused = 0
        for _ in 0..<3000 {
            var j = PieceJoiner()
            for _ in 0..<Int.random(in: 1...12, using: &rng) {
                var m: [UInt8]
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: m = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                case 1: m = [FramePieces.kind, UInt8.random(in: 0...2, using: &rng)] + [UInt8](repeating: 1, count: Int.random(in: 0...9000, using: &rng))
                case 2: m = [FramePieces.kind] + (0..<Int.random(in: 0...3, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                default: m = [UInt8.random(in: 1...0x0A, using: &rng)] + [UInt8](repeating: 2, count: Int.random(in: 0...50, using: &rng))
                }
                do {
                    if let whole = try j.accept(m) { joined += 1; XCTAssertLessThanOrEqual(whole.count, WireLimits.frame) }
                } catch {
                    refused += 1
                    XCTAssertFalse("\(error)".isEmpty)
                }
            }
        }
        XCTAssertGreaterThan(joined, 0)
        XCTAssertGreaterThan(refused, 0)
    }
}

