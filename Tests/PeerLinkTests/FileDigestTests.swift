import Foundation
import XCTest
@testable import PeerLink

/// One hashing pass per file content, however many callers ask while it runs.
final class FileDigestTests: XCTestCase {
    override func tearDown() {
        FileDigest.Hooks.holdHashing = false
    }

    private func file(_ bytes: Int, _ fill: UInt8) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pl-digest-\(UUID())").path
        try Data(repeating: fill, count: bytes).write(to: URL(fileURLWithPath: path))
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testCallersDuringAPassShareItAndHearItsProgress() async throws {
        let path = try file(9 << 20, 0x5a)  // three chunks
        let before = FileDigest.Hooks.hashes
        FileDigest.Hooks.holdHashing = true
        let started = DigestProgressLog(), heard = DigestProgressLog()
        let first = Task { try await FileDigest.sha256(ofFileAt: path) { done, total in started.add(done, total) }.digest }
        let running = await waitUntil(timeout: 10) { !started.all.isEmpty }  // the pass holds after its first chunk
        XCTAssertTrue(running, "the first pass started")
        let second = Task { try await FileDigest.sha256(ofFileAt: path) { done, total in heard.add(done, total) } }
        let joined = await waitUntil(timeout: 10) { !heard.all.isEmpty }
        XCTAssertTrue(joined, "a caller joining late hears where the pass stands at once")
        XCTAssertEqual(heard.all.first?.total, 9 << 20)
        FileDigest.Hooks.holdHashing = false
        let a = try await first.value
        let b = try await second.value
        XCTAssertEqual(a, b.digest)
        XCTAssertEqual(b.size, 9 << 20)
        XCTAssertEqual(FileDigest.Hooks.hashes - before, 1, "one pass for both callers")
        XCTAssertEqual(heard.all.last?.done, 9 << 20, "the joined caller heard the pass finish")
        let third = try await FileDigest.sha256(ofFileAt: path)
        XCTAssertEqual(third.digest, a)
        XCTAssertEqual(FileDigest.Hooks.hashes - before, 1, "and the digest is remembered after it")
    }

    func testAFailedPassFailsEveryCallerAndIsNotRemembered() async throws {
        let path = try file(9 << 20, 0x11)
        let before = FileDigest.Hooks.hashes
        FileDigest.Hooks.holdHashing = true
        let started = DigestProgressLog(), heard = DigestProgressLog()
        let first = Task { try await FileDigest.sha256(ofFileAt: path) { done, total in started.add(done, total) } }
        let running = await waitUntil(timeout: 10) { !started.all.isEmpty }
        XCTAssertTrue(running, "the first pass started")
        let second = Task { try await FileDigest.sha256(ofFileAt: path) { done, total in heard.add(done, total) } }
        let joined = await waitUntil(timeout: 10) { !heard.all.isEmpty }
        XCTAssertTrue(joined, "the second caller joined the pass")
        // The file grows under the pass: what was read no longer matches the size asked for.
        let h = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        try h.seekToEnd()
        try h.write(contentsOf: Data([1, 2, 3]))
        try h.close()
        FileDigest.Hooks.holdHashing = false
        for task in [first, second] {
            do {
                _ = try await task.value
                XCTFail("a pass over a file that changed size must fail")
            } catch {
                XCTAssertTrue("\(error)".contains("changed size"), "\(error)")
            }
        }
        XCTAssertEqual(FileDigest.Hooks.hashes, before, "no digest came of it")
        let again = try await FileDigest.sha256(ofFileAt: path)
        XCTAssertEqual(again.size, (9 << 20) + 3, "the grown file is hashed afresh")
    }
}

private final class DigestProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(done: UInt64, total: UInt64)] = []
    func add(_ done: UInt64, _ total: UInt64) { lock.withLock { entries.append((done, total)) } }
    var all: [(done: UInt64, total: UInt64)] { lock.withLock { entries } }
}
