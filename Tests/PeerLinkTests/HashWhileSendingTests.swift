import Crypto
import Foundation
import PeerLinkCore
import TestKit
import XCTest
@testable import PeerLink

/// A file the sender has not hashed yet goes at once, its SHA-256 after the last byte
/// (RESOURCE_OFFER_KEYED, PROTOCOL §11.7); the receiver still keeps it only when the whole
/// content matches, and resumes only from a partial file of the same sender and content key.
final class HashWhileSendingTests: XCTestCase {
    struct Setup {
        let pair: Pair
        let dir: String
        let src: String
        let inbox: String
        let log: OfferLog
    }

    /// A memory pair (or `pair`), a source file of `bytes`, and a receiver that accepts every offer into
    /// `inbox` and logs offers and outcomes.
    func setUp(_ bytes: Data, pair: Pair? = nil) async throws -> Setup {
        let p: Pair
        if let pair { p = pair } else {
            let net = MemoryNetwork()
            p = try await connectedPair(transportA: MemoryTransport(network: net, address: "node-a"),
                                        transportB: MemoryTransport(network: net, address: "node-b"),
                                        discovery: MemoryDiscovery(addressOf: { _ in "node-a" }))
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-hws-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let src = dir + "/source.bin", inbox = dir + "/inbox"
        try bytes.write(to: URL(fileURLWithPath: src))
        let log = OfferLog()
        let watcher = Task {
            for await e in p.sa.events {
                switch e {
                case let .resourceOffered(o):
                    log.offered(o)
                    try? await p.sa.accept(o, into: inbox)
                case let .resourceFinished(_, _, error): log.finished(error.map { "\($0)" })
                default: break
                }
            }
        }
        addTeardownBlock { watcher.cancel() }
        return Setup(pair: p, dir: dir, src: src, inbox: inbox, log: log)
    }

    /// Where the receiver keeps the partial file of a keyed offer of `path` from `sender`.
    func keyedPart(_ s: Setup) throws -> String {
        let key = try FileIdentity(path: s.src).contentKey
        return s.inbox + "/.peerlink-partial/" + ResourcePartName.forKey(key, from: s.pair.b.peerID)
    }

    func testAFreshFileGoesBeforeItIsHashedAndIsVerified() async throws {
        let content = Data((0..<(2_500_000)).map { UInt8(truncatingIfNeeded: $0 &* 11 + 5) })
        let s = try await setUp(content)
        let hashesBefore = FileDigest.Hooks.hashes
        let progress = ProgressLog()
        try await within(30, "the first send") { try await s.pair.sb.sendResource(at: s.src, to: s.pair.a.peerID) { progress.add($0) } }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: s.inbox + "/source.bin")), content)
        XCTAssertNil(s.log.offers.first?.sha256, "the offer went before the file was hashed")
        XCTAssertFalse(progress.all.contains { $0.stage == .hashing }, "no hashing stage before the bytes")
        XCTAssertEqual(FileDigest.Hooks.hashes - hashesBefore, 1, "the file was hashed once, while it was sent")
        // The digest is remembered: the same unchanged file is offered with it next time.
        try await within(30, "the second send") { try await s.pair.sb.sendResource(at: s.src, to: s.pair.a.peerID) }
        XCTAssertEqual(s.log.offers.count, 2)
        XCTAssertEqual(s.log.offers.last?.sha256, Array(SHA256.hash(data: content)), "the second offer carries the digest")
        XCTAssertEqual(FileDigest.Hooks.hashes - hashesBefore, 1, "and the file was not hashed again")
        let both = await waitUntil(timeout: 10) { s.log.errors.count == 2 }
        XCTAssertTrue(both, "the receiver reported both transfers")
        XCTAssertEqual(s.log.errors, [nil, nil], "both verified")
    }

    /// A peer that speaks minor 3 or older knows no keyed offer: the sender hashes first and
    /// offers the digest, as before.
    func testAPeerBeforeMinor4GetsTheDigestInTheOffer() async throws {
        let content = Data((0..<(700_000)).map { UInt8(truncatingIfNeeded: $0 &* 3 + 1) })
        let s = try await setUp(content)
        let channel = try XCTUnwrap(s.pair.sb.registry.channel(for: s.pair.a.peerID))
        // The channel may exist before its first link is added, and adding it sets the minor
        // both sides share: speak minor 3 only after that.
        let linked = await waitUntil(timeout: 10) { await Self.hasLink(channel) }
        XCTAssertTrue(linked, "the sender's channel has no link")
        await Self.speak(minor: 3, on: channel)
        let progress = ProgressLog()
        try await within(30, "the send to a minor-3 peer") { try await s.pair.sb.sendResource(at: s.src, to: s.pair.a.peerID) { progress.add($0) } }
        XCTAssertEqual(s.log.offers.first?.sha256, Array(SHA256.hash(data: content)), "the offer carries the digest")
        XCTAssertTrue(progress.all.contains { $0.stage == .hashing }, "the file was hashed before it was offered")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: s.inbox + "/source.bin")), content)
    }

    static func speak(minor: UInt8, on channel: isolated PeerChannel) { channel.core.sharedMinor = minor }
    static func hasLink(_ channel: isolated PeerChannel) -> Bool { !channel.linkSet.isEmpty }

    func testAKeyedTransferResumesFromItsPartialFile() async throws {
        let content = Data((0..<(900 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7 + 3) })
        let s = try await setUp(content)
        // An earlier keyed transfer of this file from this sender stopped after 300 KiB.
        let part = try keyedPart(s)
        try FileManager.default.createDirectory(atPath: (part as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try content.prefix(300 * 1024).write(to: URL(fileURLWithPath: part))
        let progress = ProgressLog()
        try await within(30, "the resumed send") { try await s.pair.sb.sendResource(at: s.src, to: s.pair.a.peerID) { progress.add($0) } }
        XCTAssertNil(s.log.offers.first?.sha256)
        let transferring = progress.all.filter { $0.stage == .transferring }
        XCTAssertEqual(transferring.first?.resumedFrom, 300 * 1024, "the transfer resumed from the partial file")
        XCTAssertEqual(progress.all.filter { $0.stage == .hashing }.last?.completed, 300 * 1024,
                       "the held part was hashed (and reported) before the rest went")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: s.inbox + "/source.bin")), content)
        XCTAssertFalse(FileManager.default.fileExists(atPath: part))
    }

    /// A keyed send cancelled mid-way leaves a partial file; the next send of the same file
    /// resumes from it (the sender hashes the held part without sending it) and verifies.
    func testACancelledKeyedSendResumesAndVerifies() async throws {
        let net = MemoryNetwork()
        net.conditions = ["node-a": MemoryLinkConditions(bandwidth: 400_000)]  // slow enough to cancel mid-way
        let p = try await connectedPair(transportA: MemoryTransport(network: net, address: "node-a"),
                                        transportB: MemoryTransport(network: net, address: "node-b"),
                                        discovery: MemoryDiscovery(addressOf: { _ in "node-a" }))
        let content = Data((0..<(2_000_000)).map { UInt8(truncatingIfNeeded: $0 &* 29 + 7) })
        let s = try await setUp(content, pair: p)
        let part = try keyedPart(s)
        let sending = Task { try await s.pair.sb.sendResource(at: s.src, to: s.pair.a.peerID) }
        let held = await waitUntil(timeout: 30) {
            ((try? FileManager.default.attributesOfItem(atPath: part)[.size] as? UInt64) ?? 0) >= 256 * 1024
        }
        XCTAssertTrue(held, "the receiver wrote part of the file")
        sending.cancel()
        do { try await within(10, "the cancelled send to end") { try await sending.value }; XCTFail("a cancelled send throws") } catch is CancellationError {}
        let failed = await waitUntil(timeout: 10) { s.log.errors.count == 1 }
        XCTAssertTrue(failed, "the receiver saw the cancel")
        let progress = ProgressLog()
        try await within(60, "the resumed send") { try await s.pair.sb.sendResource(at: s.src, to: s.pair.a.peerID) { progress.add($0) } }
        XCTAssertGreaterThan(progress.all.first { $0.stage == .transferring }?.resumedFrom ?? 0, 0, "the second send resumed")
        XCTAssertEqual(s.log.offers.map { $0.sha256 == nil }, [true, true], "both offers keyed: a cancelled send leaves no digest")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: s.inbox + "/source.bin")), content)
        XCTAssertFalse(FileManager.default.fileExists(atPath: part))
    }

    /// A partial file under the right key whose bytes are not the file's (content changed
    /// with its size and time kept) is never kept as the file: the digest after the last byte
    /// covers the sender's whole file, the check the receiver's prefix too.
    func testAPartialFileOfOtherContentNeverLands() async throws {
        let content = Data(repeating: 0x41, count: 400_000)
        let s = try await setUp(content)
        let part = try keyedPart(s)
        try FileManager.default.createDirectory(atPath: (part as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(repeating: 0x42, count: 5000).write(to: URL(fileURLWithPath: part))
        do {
            try await within(30, "the send over a wrong prefix") { try await s.pair.sb.sendResource(at: s.src, to: s.pair.a.peerID) }
            XCTFail("a wrong prefix must fail the hash check")
        } catch let e as PeerLinkError {
            XCTAssertTrue("\(e)".contains("SHA-256"), "\(e)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.inbox + "/source.bin"), "no file under the final name")
        XCTAssertFalse(FileManager.default.fileExists(atPath: part), "the wrong bytes are discarded")
        // The next offer starts from 0 and lands.
        try await within(30, "the send after the failure") { try await s.pair.sb.sendResource(at: s.src, to: s.pair.a.peerID) }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: s.inbox + "/source.bin")), content)
    }

    /// A file edited since an interrupted transfer has another content key: its old partial
    /// file is not continued.
    func testAnEditedFileDoesNotResumeFromTheOldPartialFile() async throws {
        let old = Data(repeating: 0x61, count: 300_000)
        let s = try await setUp(old)
        let oldPart = try keyedPart(s)
        try FileManager.default.createDirectory(atPath: (oldPart as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try old.prefix(100_000).write(to: URL(fileURLWithPath: oldPart))
        let edited = Data(repeating: 0x62, count: 300_000)
        try edited.write(to: URL(fileURLWithPath: s.src))
        // A file system with coarse times could keep the same modification time: make it differ.
        let later = Date().addingTimeInterval(5)
        try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: s.src)
        XCTAssertNotEqual(try keyedPart(s), oldPart, "the edited file has another key")
        let progress = ProgressLog()
        try await within(30, "the send of the edited file") { try await s.pair.sb.sendResource(at: s.src, to: s.pair.a.peerID) { progress.add($0) } }
        XCTAssertEqual(progress.first?.resumedFrom, 0, "nothing of the old content was continued")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: s.inbox + "/source.bin")), edited)
        XCTAssertTrue(FileManager.default.fileExists(atPath: oldPart), "the old partial file is left alone")
    }
}

/// What the receiver was offered and how each transfer ended.
final class OfferLog: @unchecked Sendable {
    private let lock = NSLock()
    private var offerItems: [ResourceOffer] = []
    private var errorItems: [String?] = []
    func offered(_ o: ResourceOffer) { lock.withLock { offerItems.append(o) } }
    func finished(_ e: String?) { lock.withLock { errorItems.append(e) } }
    var offers: [ResourceOffer] { lock.withLock { offerItems } }
    var errors: [String?] { lock.withLock { errorItems } }
}
