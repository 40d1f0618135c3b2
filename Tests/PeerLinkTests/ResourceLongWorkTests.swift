import Foundation
import XCTest
@testable import PeerLink

/// Long file work (hashing, reading back a resumed part file, writing) must never stop a node
/// from answering keepalives: a 4 GiB file once took ~10 s to hash on the peer's actor, and
/// the link was declared dead after 3 s. Here a slow disk is simulated (a pause after each
/// chunk) and the keepalive bound made short, so the same fault shows in seconds.
final class ResourceLongWorkTests: XCTestCase {
    override func tearDown() {
        FileDigest.Hooks.delayPerChunk = 0
    }

    /// Keepalive bound of 600 ms; the simulated hash below takes about 2 s.
    static var shortKeepalive: SessionConfig {
        var c = SessionConfig()
        c.keepaliveInterval = 150
        c.deadAfter = 600
        return c
    }

    func makeDir() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-long-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Link or peer losses seen on a session while `body` runs.
    func losses(on sessions: [Session], during body: () async throws -> Void) async rethrows -> [String] {
        let log = LossLog()
        let watchers = sessions.map { s in
            Task {
                for await e in s.events {
                    switch e {
                    case let .linkChanged(_, link, _, false, reason): log.add("link \(link) down: \(reason)")
                    case let .peerStateChanged(_, _, .notConnected): log.add("peer not connected")
                    case let .resourceOffered(o): try? await s.accept(o, into: log.inbox)
                    case let .resourceProgress(p) where p.stage == .verifying: log.add("verifying")
                    default: break
                    }
                }
            }
        }
        defer { watchers.forEach { $0.cancel() } }
        try await body()
        return log.lines.filter { $0 != "verifying" }
    }

    func testKeepalivesGoOnWhileTheSenderHashesSlowly() async throws {
        let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                        discovery: LoopbackDiscovery(), config: Self.shortKeepalive)
        let dir = try makeDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let src = dir + "/big.bin"
        let content = Data((0..<(12 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try content.write(to: URL(fileURLWithPath: src))
        LossLog.inboxPath = dir + "/inbox"
        FileDigest.Hooks.delayPerChunk = 700_000  // 3 chunks of 4 MiB: ~2.1 s of hashing
        let stages = StageLog()
        let lost = try await losses(on: [p.sa, p.sb]) {
            try await p.sb.sendResource(at: src, to: p.a.peerID) { stages.add($0.stage) }
        }
        XCTAssertEqual(lost, [], "the link stayed up while the sender hashed for longer than the keepalive bound")
        XCTAssertTrue(stages.all.contains(.hashing), "hashing is reported as progress")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/inbox/big.bin")), content)
    }

    func testTheDigestIsComputedOncePerFile() async throws {
        let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                        discovery: LoopbackDiscovery())
        let dir = try makeDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let src = dir + "/twice.bin"
        try Data(repeating: 0x61, count: 300_000).write(to: URL(fileURLWithPath: src))
        LossLog.inboxPath = dir + "/inbox"
        let before = FileDigest.Hooks.hashes
        // One watcher for all three sends: a session's event stream has one consumer.
        _ = try await losses(on: [p.sa]) {
            try await p.sb.sendResource(at: src, to: p.a.peerID)
            try await p.sb.sendResource(at: src, to: p.a.peerID)
            XCTAssertEqual(FileDigest.Hooks.hashes - before, 1, "a second send (a retry) reuses the digest")
            // A changed file is hashed again.
            try Data(repeating: 0x62, count: 300_001).write(to: URL(fileURLWithPath: src))
            try await p.sb.sendResource(at: src, to: p.a.peerID)
            XCTAssertEqual(FileDigest.Hooks.hashes - before, 2, "a changed file is hashed again")
        }
    }

    func testKeepalivesGoOnWhileTheReceiverChecksAResumedPart() async throws {
        let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                        discovery: LoopbackDiscovery(), config: Self.shortKeepalive)
        let dir = try makeDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let src = dir + "/resume.bin"
        let content = Data((0..<(13 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })
        try content.write(to: URL(fileURLWithPath: src))
        let (_, sha) = try await FileDigest.sha256(ofFileAt: src)
        let inbox = dir + "/inbox"
        try FileManager.default.createDirectory(atPath: inbox + "/.peerlink-partial", withIntermediateDirectories: true)
        try content.prefix(12 << 20).write(to: URL(fileURLWithPath: inbox + "/.peerlink-partial/\(FileDigest.hex(sha)).part"))
        LossLog.inboxPath = inbox
        FileDigest.Hooks.delayPerChunk = 700_000  // 3 chunks of the held 12 MiB: ~2.1 s
        let lost = try await losses(on: [p.sa, p.sb]) { try await p.sb.sendResource(at: src, to: p.a.peerID) }
        XCTAssertEqual(lost, [], "the link stayed up while the receiver read back the partial file")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: inbox + "/resume.bin")), content)
    }
}

final class LossLog: @unchecked Sendable {
    nonisolated(unsafe) static var inboxPath = ""
    private let lock = NSLock()
    private var items: [String] = []
    let inbox = LossLog.inboxPath
    func add(_ s: String) { lock.withLock { items.append(s) } }
    var lines: [String] { lock.withLock { items } }
}

final class StageLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [ResourceProgress.Stage] = []
    func add(_ s: ResourceProgress.Stage) { lock.withLock { items.append(s) } }
    var all: [ResourceProgress.Stage] { lock.withLock { items } }
}
