import Foundation
import TestKit
import XCTest
@testable import PeerLink

/// Long file work (hashing, reading back a resumed part file, writing) must never stop a node
/// from answering keepalives: a 4 GiB file once took ~10 s to hash on the peer's actor, and
/// the link was declared dead after 3 s. Here a slow disk is simulated (a pause after each
/// chunk) and the keepalive bound made short, so the same fault shows in seconds.
final class ResourceLongWorkTests: XCTestCase {
    override func tearDown() {
        FileDigest.Hooks.delayPerChunk = 0
        IncomingFileWriter.Hooks.holdEveryOtherCompletion = 0
    }

    /// Keepalive bound of 600 ms; the simulated hash below takes about 2 s.
    static var shortKeepalive: SessionConfig {
        var c = SessionConfig()
        c.keepaliveInterval = .milliseconds(150)
        c.deadAfter = .milliseconds(600)
        return c
    }

    func makeDir() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-long-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Two sessions over loopback TCP and a scratch directory (removed after the test) whose
    /// `inbox` receives the files the watcher in `losses` accepts.
    func loopbackPairAndInbox(config: SessionConfig = SessionConfig()) async throws -> (Pair, dir: String) {
        let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                        discovery: LoopbackDiscovery(), config: config)
        let dir = try makeDir()
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        LossLog.inboxPath = dir + "/inbox"
        return (p, dir)
    }

    /// Link or peer losses seen on a session while `body` runs (which fails the test if it has
    /// not finished within `seconds`).
    func losses(on sessions: [Session], within seconds: Double = 120, file: StaticString = #filePath, line: UInt = #line,
                during body: @escaping @Sendable () async throws -> Void) async throws -> [String] {
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
        try await within(seconds, "the transfers to finish", progress: { "losses so far: \(log.lines)" }, file: file, line: line, body)
        return log.lines.filter { $0 != "verifying" }
    }

    /// The sender hashes while it sends; with a slow hasher its digest comes late after the
    /// last byte, and the link must stay up meanwhile.
    func testKeepalivesGoOnWhileTheSenderHashesSlowly() async throws {
        let (p, dir) = try await loopbackPairAndInbox(config: Self.shortKeepalive)
        let src = dir + "/big.bin"
        let content = Data((0..<(12 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try content.write(to: URL(fileURLWithPath: src))
        FileDigest.Hooks.delayPerChunk = 175_000  // 12 chunks of 1 MiB read for sending: ~2.1 s of hashing
        let stages = StageLog()
        let lost = try await losses(on: [p.sa, p.sb]) {
            try await p.sb.sendResource(at: src, to: p.a.peerID) { stages.add($0.stage) }
        }
        XCTAssertEqual(lost, [], "the link stayed up while the sender hashed for longer than the keepalive bound")
        XCTAssertFalse(stages.all.contains(.hashing), "the bytes went before the file was hashed: no hashing stage first")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/inbox/big.bin")), content)
    }

    func testTheDigestIsComputedOncePerFile() async throws {
        let (p, dir) = try await loopbackPairAndInbox()
        let src = dir + "/twice.bin"
        try Data(repeating: 0x61, count: 300_000).write(to: URL(fileURLWithPath: src))
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

    /// `prepareToSend` hashes ahead; a send that starts while it still hashes waits for that
    /// pass (and reports it as its own hashing) instead of reading the file a second time.
    func testASendDuringPrepareToSendUsesTheSamePass() async throws {
        let (p, dir) = try await loopbackPairAndInbox()
        let src = dir + "/ahead.bin"
        let content = Data((0..<(9 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try content.write(to: URL(fileURLWithPath: src))
        let before = FileDigest.Hooks.hashes
        FileDigest.Hooks.holdHashing = true
        defer { FileDigest.Hooks.holdHashing = false }
        let prepared = Task { try await p.sb.prepareToSend(fileAt: src) }
        try await Task.sleep(for: .milliseconds(100))
        let stages = StageLog()
        _ = try await losses(on: [p.sa]) {
            let send = Task { try await p.sb.sendResource(at: src, to: p.a.peerID) { stages.add($0.stage) } }
            let joined = await waitUntil(timeout: 10) { stages.all.contains(.hashing) }
            XCTAssertTrue(joined, "the send joined the pass and reported it as its hashing")
            FileDigest.Hooks.holdHashing = false
            try await prepared.value
            try await send.value
        }
        XCTAssertEqual(FileDigest.Hooks.hashes - before, 1, "the send waited for the pass prepareToSend started")
        XCTAssertTrue(stages.all.contains(.hashing), "the send reported the shared pass as its hashing")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/inbox/ahead.bin")), content)
    }

    /// Many sends in a row, each of which must finish: the receiver's write completions come
    /// back through separate tasks and may run out of order, which once made it count bytes
    /// twice near the end ("the sender sent more than the announced 300000 bytes") and cancel
    /// the transfer after the sender had closed it, a cancel the sender's core then dropped, so
    /// `sendResource` waited forever (1 run in 4 of this class hung). Every other completion
    /// is held back here, so they always arrive out of order.
    func testSendsInARowAllFinishAndNoneHangs() async throws {
        IncomingFileWriter.Hooks.holdEveryOtherCompletion = 20_000_000
        let dir = try makeDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let src = dir + "/row.bin"
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }).write(to: URL(fileURLWithPath: src))
        for round in 0..<4 {
            let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                            discovery: LoopbackDiscovery())
            let inbox = dir + "/inbox-\(round)"
            let failures = LossLog()
            let watcher = Task {
                for await e in p.sa.events {
                    if case let .resourceOffered(o) = e { try? await p.sa.accept(o, into: inbox) }
                    if case let .resourceFinished(_, _, error?) = e { failures.add("\(error)") }
                }
            }
            for k in 0..<3 {
                let send = Task { try await p.sb.sendResource(at: src, to: p.a.peerID) }
                let outcome = ResultBox()
                Task { do { try await send.value; outcome.set("ok") } catch { outcome.set("\(error)") } }
                let ended = await waitUntil(timeout: 30) { outcome.value != nil }
                if !ended {
                    send.cancel()
                    let state = await p.sb.debugState() + "\n" + (await p.sa.debugState())
                    return XCTFail("send \(k) of round \(round) never finished:\n\(state)")
                }
                XCTAssertEqual(outcome.value, "ok", "send \(k) of round \(round)")
            }
            XCTAssertEqual(failures.lines, [], "round \(round)")
            watcher.cancel()
            await p.sb.disconnect()
            await p.sa.disconnect()
        }
    }

    func testKeepalivesGoOnWhileTheReceiverChecksAResumedPart() async throws {
        let (p, dir) = try await loopbackPairAndInbox(config: Self.shortKeepalive)
        let src = dir + "/resume.bin"
        let content = Data((0..<(13 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })
        try content.write(to: URL(fileURLWithPath: src))
        let (_, sha) = try await FileDigest.sha256(ofFileAt: src)
        let inbox = dir + "/inbox"
        try FileManager.default.createDirectory(atPath: inbox + "/.peerlink-partial", withIntermediateDirectories: true)
        try content.prefix(12 << 20).write(to: URL(fileURLWithPath: inbox + "/.peerlink-partial/\(FileDigest.hex(sha)).part"))
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

final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var item: String?
    func set(_ s: String) { lock.withLock { item = s } }
    var value: String? { lock.withLock { item } }
}

final class StageLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [ResourceProgress.Stage] = []
    func add(_ s: ResourceProgress.Stage) { lock.withLock { items.append(s) } }
    var all: [ResourceProgress.Stage] { lock.withLock { items } }
}
