import Foundation
import TestKit
import XCTest
@testable import PeerLink

final class SessionEndToEndTests: XCTestCase {
    /// Alpha listens at memory address "node-a" (only alpha publishes), beta dials from "node-b".
    func memoryPair(config: SessionConfig = SessionConfig()) async throws -> (Pair, MemoryNetwork) {
        let net = MemoryNetwork()
        let pair = try await connectedPair(transportA: MemoryTransport(network: net, address: "node-a"),
                                           transportB: MemoryTransport(network: net, address: "node-b"),
                                           discovery: MemoryDiscovery(addressOf: { _ in "node-a" }), config: config)
        return (pair, net)
    }

    func testReliableMessagesBothWaysInOrder() async throws {
        let (p, _) = try await memoryPair()
        let n = 500
        async let received = collectNumbers(n, from: p.sa, within: 30)
        try await within(30, "sending \(n) messages") { for i in 0..<n { try await p.sb.send(Array("\(i)".utf8), to: [p.a.peerID]) } }
        let got = try await received
        XCTAssertEqual(got, Array(0..<n))
        try await p.sa.send(Array("pong".utf8), to: [p.b.peerID])
        let back = try await waitFor(p.sb, "the pong") { e -> [UInt8]? in if case let .message(_, b, _) = e { return b }; return nil }
        XCTAssertEqual(String(decoding: back, as: UTF8.self), "pong")
    }

    func testLargeMessageIsFragmentedAndReassembled() async throws {
        let (p, _) = try await memoryPair()
        let big = (0..<(3 * 1024 * 1024 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try await p.sb.send(big, to: [p.a.peerID])
        let got = try await waitFor(p.sa, timeout: 30, "the 3 MB message") { e -> [UInt8]? in if case let .message(_, b, _) = e { return b }; return nil }
        XCTAssertEqual(got, big)
    }

    func testResourceTransferVerifiesAndResumes() async throws {
        let (p, _) = try await memoryPair()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-res-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let src = dir + "/source.bin"
        let content = Data((0..<(700 * 1024)).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) })
        try content.write(to: URL(fileURLWithPath: src))
        let inbox = dir + "/inbox"
        // Pretend an earlier transfer stopped after 300 KiB: the part file is keyed by the hash.
        let (_, sha) = try await FileDigest.sha256(ofFileAt: src)
        try FileManager.default.createDirectory(atPath: inbox + "/.peerlink-partial", withIntermediateDirectories: true)
        try content.prefix(300 * 1024).write(to: URL(fileURLWithPath: inbox + "/.peerlink-partial/\(FileDigest.hex(sha)).part"))

        let accepter = Task { () -> ResourceOffer? in
            for await e in p.sa.events {
                if case let .resourceOffered(offer) = e { try await p.sa.accept(offer, into: inbox); return offer }
            }
            return nil
        }
        let progress = ProgressLog()
        try await within(30, "the resource sent") {
            try await p.sb.sendResource(at: src, name: "../../etc/evil.bin", to: p.a.peerID) { progress.add($0) }
        }
        let offer = try await within(10, "the receiver's offer") { try await accepter.value }
        XCTAssertEqual(offer?.name, "evil.bin", "path components from the network are stripped")
        let finalPath = inbox + "/evil.bin"
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: finalPath)), content)
        XCTAssertEqual(progress.first?.resumedFrom, 300 * 1024, "the transfer resumed from the partial file")
        XCTAssertEqual(progress.last?.completed, UInt64(content.count))
        XCTAssertFalse(FileManager.default.fileExists(atPath: inbox + "/.peerlink-partial/\(FileDigest.hex(sha)).part"))
    }

    func testCorruptPartialFileIsDetectedByHash() async throws {
        let (p, _) = try await memoryPair()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-bad-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir + "/inbox/.peerlink-partial", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let src = dir + "/a.bin"
        let content = Data(repeating: 0x41, count: 100_000)
        try content.write(to: URL(fileURLWithPath: src))
        let (_, sha) = try await FileDigest.sha256(ofFileAt: src)
        try Data(repeating: 0x42, count: 5000).write(to: URL(fileURLWithPath: dir + "/inbox/.peerlink-partial/\(FileDigest.hex(sha)).part"))
        Task { for await e in p.sa.events { if case let .resourceOffered(o) = e { try await p.sa.accept(o, into: dir + "/inbox") } } }
        do {
            try await within(30, "the corrupted resume to end") { try await p.sb.sendResource(at: src, to: p.a.peerID) }
            XCTFail("a corrupted resume must fail the hash check")
        } catch let e as PeerLinkError {
            XCTAssertTrue("\(e)".contains("SHA-256"), "\(e)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/inbox/a.bin"), "no file under the final name")
    }

    func testSilentCutIsDetectedWithinKeepaliveBound() async throws {
        var config = SessionConfig()
        config.keepaliveInterval = .milliseconds(200)
        config.deadAfter = .milliseconds(600)
        let (p, net) = try await memoryPair(config: config)
        // Both sides must notice, with no traffic from the application, within three times the
        // 0.6 s bound (a margin for a loaded machine; nothing else in a memory link would
        // notice a silent cut at all).
        let bound = 3 * config.deadAfter.inSeconds
        let start = Date()
        net.cut("node-a")
        async let a: (PeerID, LinkChangeReason) = waitFor(p.sa, timeout: bound, "alpha noticing the silent cut") { e in
            if case let .linkChanged(peer, _, _, false, reason) = e { return (peer, reason) }; return nil
        }
        async let b: (PeerID, LinkChangeReason) = waitFor(p.sb, timeout: bound, "beta noticing the silent cut") { e in
            if case let .linkChanged(peer, _, _, false, reason) = e { return (peer, reason) }; return nil
        }
        let (pa, pb) = try await (a, b)
        let took = Date().timeIntervalSince(start)
        XCTAssertEqual(pa.0, p.b.peerID)
        XCTAssertEqual(pb.0, p.a.peerID)
        XCTAssertEqual(pa.1, .silent(for: config.deadAfter), "the keepalive found it, not another mechanism")
        XCTAssertEqual(pb.1, .silent(for: config.deadAfter))
        XCTAssertEqual(pa.1.description, "nothing received for 0.6 s (keepalive)")
        XCTAssertLessThan(took, bound, "both sides noticed within \(bound) s")
        let ended = await waitUntil(timeout: 2) { await p.sa.connectedPeers().isEmpty }
        XCTAssertTrue(ended, "the peer is gone once its only link died")
    }

    func testStreamWithCreditFlowControl() async throws {
        var config = SessionConfig()
        config.streamWindow = 8 * 1024
        let (p, _) = try await memoryPair(config: config)
        let total = 200 * 1024
        let reader = Task { () -> [UInt8] in
            for await e in p.sa.events {
                if case let .streamOpened(s) = e {
                    var all: [UInt8] = []
                    while let chunk = try await s.read() { all += chunk }
                    return all
                }
            }
            return []
        }
        let out = try await p.sb.openStream(name: "telemetry", to: p.a.peerID)
        let data = (0..<total).map { UInt8(truncatingIfNeeded: $0 / 3) }
        try await within(30, "the stream's 200 KiB written") {
            try await out.write(data)
            await out.close()
        }
        let got = try await within(30, "the stream read to its end") { try await reader.value }
        XCTAssertEqual(got, data)
    }

    func testGracefulDisconnect() async throws {
        let (p, _) = try await memoryPair()
        await p.sb.disconnect()
        let peer = try await waitFor(p.sa, "beta leaving") { e in if case let .peerStateChanged(peer, _, .notConnected) = e { return peer }; return nil }
        XCTAssertEqual(peer, p.b.peerID)
    }

    func testDeclinedInvitation() async throws {
        let net = MemoryNetwork()
        let disc = MemoryDiscovery()
        let idA = Identity()
        let a = try Node(identity: idA, displayName: "alpha", transports: [MemoryTransport(network: net, address: idA.peerID.description)])
        let b = try Node(identity: Identity(), displayName: "beta", transports: [MemoryTransport(network: net, address: "b")])
        let adv = Advertiser(node: a, service: try ServiceType("x1"), discovery: disc)
        try await adv.start()
        Task { for await inv in adv.invitations { XCTAssertEqual(inv.context, [9]); inv.decline() } }
        let peerA = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .memory, host: idA.peerID.description, port: 0)])
        do {
            try await b.invite(peerA, to: Session(node: b), context: [9], timeout: .seconds(3))
            XCTFail("declined invitation must throw")
        } catch let e as PeerLinkError {
            XCTAssertEqual(e, .invitationDeclined(a.peerID))
        }
    }

    func testDiallingTheWrongKeyIsRefused() async throws {
        let net = MemoryNetwork()
        let idA = Identity()
        let a = try Node(identity: idA, displayName: "alpha", transports: [MemoryTransport(network: net, address: "a")])
        try await a.start()
        let b = try Node(identity: Identity(), displayName: "beta", transports: [MemoryTransport(network: net, address: "b")])
        let impostor = Identity().peerID
        let info = PeerInfo(peerID: impostor, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .memory, host: "a", port: 0)])
        do {
            try await b.invite(info, to: Session(node: b), timeout: .seconds(3))
            XCTFail("must not connect to a key that is not the dialled peer's")
        } catch let e as PeerLinkError {
            guard case let .unreachable(_, failures) = e else { return XCTFail("\(e)") }
            XCTAssertEqual(failures.map(\.reason), [.wrongPeer(idA.peerID)], "\(failures)")
            XCTAssertTrue(e.description.contains("not the expected peer"), "\(e)")
        }
    }
}

final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [ResourceProgress] = []
    func add(_ p: ResourceProgress) { lock.withLock { items.append(p) } }
    var first: ResourceProgress? { lock.withLock { items.first } }
    var last: ResourceProgress? { lock.withLock { items.last } }
    var all: [ResourceProgress] { lock.withLock { items } }
}

final class ResourceCancellationTests: XCTestCase {
    func slowPair() async throws -> (Pair, String) {
        let net = MemoryNetwork()
        let idA = Identity(), idB = Identity()
        // 200 KB/s: a 2 MB file takes ~10 s, so cancellation lands mid-transfer.
        net.conditions = ["a": MemoryLinkConditions(bandwidth: 200_000)]
        let a = try Node(identity: idA, displayName: "alpha", transports: [MemoryTransport(network: net, address: "a")])
        let b = try Node(identity: idB, displayName: "beta", transports: [MemoryTransport(network: net, address: "b")])
        let sa = Session(node: a), sb = Session(node: b)
        let adv = Advertiser(node: a, service: try ServiceType("cancel"), discovery: MemoryDiscovery())
        try await adv.start()
        Task { for await i in adv.invitations { i.accept(into: sa) } }
        let info = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .memory, host: "a", port: 0)])
        try await b.invite(info, to: sb, timeout: .seconds(5))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-cancel-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data(repeating: 0x5a, count: 2_000_000).write(to: URL(fileURLWithPath: dir + "/big.bin"))
        return (Pair(a: a, b: b, sa: sa, sb: sb, peerA: info), dir)
    }

    func testSenderCancellationIsReportedAndPartialKept() async throws {
        let (p, dir) = try await slowPair()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // One consumer of the receiver's events: accepts the offer, returns the outcome.
        let receiver = Task { () -> ResourceFailure? in
            for await e in p.sa.events {
                if case let .resourceOffered(o) = e { try? await p.sa.accept(o, into: dir + "/in") }
                if case let .resourceFinished(_, _, error) = e { return error }
            }
            return nil
        }
        let sending = Task { try await p.sb.sendResource(at: dir + "/big.bin", to: p.a.peerID) }
        try await Task.sleep(nanoseconds: 1_500_000_000)
        sending.cancel()
        do { try await within(10, "the cancelled send to end") { try await sending.value }; XCTFail("cancelled send must throw") } catch is CancellationError {}
        let error = try await within(10, "the receiver's resourceFinished") { await receiver.value }
        XCTAssertEqual(error, .cancelledBySender(name: "big.bin"))
        XCTAssertEqual(error?.description, "cancelled by the sender; the partial file is kept to resume")
        let parts = try FileManager.default.contentsOfDirectory(atPath: dir + "/in/.peerlink-partial")
        XCTAssertEqual(parts.count, 1, "the partial file is kept for a later resume")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/in/big.bin"))
    }

    func testReceiverCancellationFailsTheSender() async throws {
        let (p, dir) = try await slowPair()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let receiver = Task { () -> ResourceFailure? in
            for await e in p.sa.events {
                if case let .resourceOffered(o) = e {
                    try? await p.sa.accept(o, into: dir + "/in")
                    try? await Task.sleep(nanoseconds: 1_000_000_000)
                    await p.sa.cancel(o)
                }
                if case let .resourceFinished(_, _, error) = e { return error }
            }
            return nil
        }
        do {
            try await within(20, "the send the receiver cancelled to end") { try await p.sb.sendResource(at: dir + "/big.bin", to: p.a.peerID) }
            XCTFail("the receiver cancelled; the send must fail")
        } catch let e as PeerLinkError {
            XCTAssertEqual(e, .resourceFailed(.cancelledByReceiver(name: "big.bin")))
            XCTAssertEqual(e.description, "transfer failed: the receiver cancelled 'big.bin'")
        }
        let error = try await within(10, "the receiver's resourceFinished") { await receiver.value }
        XCTAssertEqual(error, .cancelledByReceiver(name: "big.bin"))
    }
}

final class PeerStateTests: XCTestCase {
    func testInviterSeesConnectingThenNotConnectedWhenDeclined() async throws {
        let net = MemoryNetwork()
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [MemoryTransport(network: net, address: "a")])
        let b = try Node(identity: Identity(), displayName: "beta", transports: [MemoryTransport(network: net, address: "b")])
        let adv = Advertiser(node: a, service: try ServiceType("states"), discovery: MemoryDiscovery())
        try await adv.start()
        Task { for await inv in adv.invitations { inv.decline() } }
        let sb = Session(node: b)
        let states = Task { () -> [PeerState] in
            var seen: [PeerState] = []
            for await e in sb.events {
                if case let .peerStateChanged(_, _, s) = e { seen.append(s); if s == .notConnected { break } }
            }
            return seen
        }
        let info = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .memory, host: "a", port: 0)])
        try? await b.invite(info, to: sb, timeout: .seconds(3))
        let seen = try await within(10, "beta's states up to notConnected") { await states.value }
        XCTAssertEqual(seen, [.connecting, .notConnected])
    }
}

final class SlowReaderTests: XCTestCase {
    /// A receiver that stops reading events pauses the sender (bounded memory); once it reads
    /// again, everything arrives, in order, nothing dropped.
    func testSlowReaderPausesSenderAndLosesNothing() async throws {
        let net = MemoryNetwork()
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [MemoryTransport(network: net, address: "a")])
        let b = try Node(identity: Identity(), displayName: "beta", transports: [MemoryTransport(network: net, address: "b")])
        var config = SessionConfig()
        config.sendWindow = 64 * 1024
        config.maxBacklog = 64 * 1024
        let sa = Session(node: a, config: config, maxUnreadEvents: 100), sb = Session(node: b, config: config)
        let adv = Advertiser(node: a, service: try ServiceType("slow"), discovery: MemoryDiscovery())
        try await adv.start()
        Task { for await i in adv.invitations { i.accept(into: sa) } }
        let info = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .memory, host: "a", port: 0)])
        try await b.invite(info, to: sb, timeout: .seconds(5))

        let total = 20_000
        let progress = Counter()
        let sender = Task {
            for i in 0..<total {
                try await sb.send(Array("\(i)".utf8) + [UInt8](repeating: 0, count: 100), to: [a.peerID])
                progress.set(i + 1)
            }
        }
        try await Task.sleep(nanoseconds: 1_500_000_000)
        let sentWhileNobodyReads = progress.value
        XCTAssertLessThan(sentWhileNobodyReads, total, "the sender is paused while the receiver does not read")
        XCTAssertLessThan(sa.queue.unread, 2_000, "unread events stay bounded (window-sized), not \(sa.queue.unread)")

        let got = try await collect(total, "reliable messages", from: sa, within: 60) { e -> Int? in
            guard case let .message(_, bytes, .reliable) = e else { return nil }
            return Int(String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)) ?? -1
        }
        try await within(10, "the sender to finish") { try await sender.value }
        XCTAssertEqual(got.count, total)
        XCTAssertEqual(got, Array(0..<total), "every message once, in order")
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var v = 0
    func set(_ n: Int) { lock.withLock { v = n } }
    func increment() { lock.withLock { v += 1 } }
    var value: Int { lock.withLock { v } }
}
