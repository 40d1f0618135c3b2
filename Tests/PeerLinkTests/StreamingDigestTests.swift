import Crypto
import Foundation
import TestKit
import XCTest
@testable import PeerLink

/// The sender's hash of the bytes it reads: chunks handed over in order give the file's
/// SHA-256, and a hasher that falls behind says so until it has caught up.
final class StreamingDigestTests: XCTestCase {
    override func tearDown() { FileDigest.Hooks.holdHashing = false }

    func testChunksInOrderGiveTheDigestOfTheWhole() async throws {
        let chunks = (0..<5).map { i in (0..<(300_000 + i)).map { UInt8(truncatingIfNeeded: $0 &* 13 + i) } }
        let digest = StreamingDigest()
        for c in chunks { digest.update(c) }
        let (count, sha) = try await digest.finish()
        XCTAssertEqual(count, UInt64(chunks.reduce(0) { $0 + $1.count }))
        XCTAssertEqual(sha, Array(SHA256.hash(data: Data(chunks.joined()))))
    }

    func testAHasherBehindByMoreThanItsBoundSaysSoUntilItCatchesUp() async throws {
        let digest = StreamingDigest()
        let chunk = [UInt8](repeating: 1, count: 1 << 20)
        FileDigest.Hooks.holdHashing = true  // the first chunk's job waits after hashing it
        for _ in 0..<(StreamingDigest.maxBehind / chunk.count + 2) { digest.update(chunk) }
        XCTAssertTrue(digest.isBehind, "more than the bound handed over and not hashed")
        FileDigest.Hooks.holdHashing = false
        try await within(30, "the hasher to catch up") { try await digest.catchUp() }
        XCTAssertFalse(digest.isBehind)
    }
}
