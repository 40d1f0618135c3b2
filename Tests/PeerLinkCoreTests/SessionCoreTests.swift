import XCTest
import DocVectors
import TestKit
import PeerLinkWire
@testable import PeerLinkCore

final class SessionCoreTests: XCTestCase {
    // MARK: reliable delivery

    func testReliableDeliveryInOrder() throws {
        let p = SessionPair()
        p.up(1)
        let msgs = (0..<100).map { message($0, size: 1 + $0 * 13) }
        for m in msgs { try p.a.send(m, reliable: true, now: p.now) }
        XCTAssertGreaterThan(p.a.unacknowledgedBytes, 0)
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, msgs)
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
        XCTAssertEqual(p.a.backlogBytes, 0)
        XCTAssertTrue(SessionPair.violations(p.eventsA + p.eventsB).isEmpty)
    }

    func testBothDirectionsAndEmptyMessage() throws {
        let p = SessionPair()
        p.up(1)
        try p.a.send([], reliable: true, now: 0)
        try p.b.send([1, 2, 3], reliable: true, now: 0)
        try p.a.send([4], reliable: true, now: 0)
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, [[], [4]])
        XCTAssertEqual(p.reliableMessagesA, [[1, 2, 3]])
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
        XCTAssertEqual(p.b.unacknowledgedBytes, 0)
    }

    func testMessagesQueuedWithoutLinkGoOutWhenOneComesUp() throws {
        let p = SessionPair()
        try p.a.send([1], reliable: true, now: 0)
        XCTAssertThrowsError(try p.a.send([2], reliable: false, now: 0)) { XCTAssertEqual($0 as? SessionError, .noLink) }
        p.collect()
        XCTAssertTrue(p.sentByA.isEmpty)
        p.up(7)
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, [[1]])
    }

    func testFragmentationAndReassembly() throws {
        var c = SessionConfig()
        c.fragmentSize = 1000
        let p = SessionPair(a: c, b: c)
        p.up(1)
        let big = message(1, size: 10_500)
        try p.a.send(big, reliable: true, now: 0)
        p.collect()
        let parts = p.sentByA.compactMap { e -> (Bool, Int)? in
            if case let .reliable(_, .messagePart(final, bytes)) = e.frame { return (final, bytes.count) }
            return nil
        }
        XCTAssertEqual(parts.count, 11)
        XCTAssertEqual(parts.map(\.1), Array(repeating: 1000, count: 10) + [500])
        XCTAssertEqual(parts.map(\.0), Array(repeating: false, count: 10) + [true])
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, [big])
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
    }

    /// A payload that arrives in an array of its own (a link that decrypts payloads apart)
    /// reaches the application as that array, and a last part is appended to the first one's
    /// array when it has room: neither is copied. Parts without room are joined as before.
    func testPayloadsInTheirOwnArraysAreDeliveredWithoutACopy() throws {
        var b = SessionCore(role: .responder)
        b.linkUp(1, now: 0)
        func storage(_ a: [UInt8]) -> UnsafeRawPointer? { a.withUnsafeBytes { $0.baseAddress } }
        func delivered() -> [[UInt8]] {
            b.takeOutputs().compactMap { if case let .event(.message(m, true)) = $0 { return m }; return nil }
        }
        let whole = message(1, size: 65_000)
        let wholeAt = storage(whole)
        b.receive(.reliable(seq: 1, record: .messagePart(final: true, bytes: whole[...])), on: 1, now: 0)
        var got = delivered()
        XCTAssertEqual(got, [whole])
        XCTAssertEqual(got.first.flatMap(storage), wholeAt, "a whole-array payload is handed over, not copied")

        // The first part's array, with spare room, held by nobody but the session (as a
        // link's is once it has handed the frame on).
        func receiveFirstPart() -> UnsafeRawPointer? {
            var first = [UInt8]()
            first.reserveCapacity(65_487 + 4096)
            first.append(contentsOf: message(2, size: 65_487))
            b.receive(.reliable(seq: 2, record: .messagePart(final: false, bytes: first[...])), on: 1, now: 0)
            return storage(first)
        }
        let firstAt = receiveFirstPart()
        let last = message(3, size: 49)
        b.receive(.reliable(seq: 3, record: .messagePart(final: true, bytes: last[...])), on: 1, now: 0)
        got = delivered()
        XCTAssertEqual(got, [message(2, size: 65_487) + last])
        XCTAssertEqual(got.first.flatMap(storage), firstAt, "the last part went into the first part's spare room")

        // Slices of a larger plaintext, and a first part with no room: joined into a new array.
        let plaintext = [0xee] + message(4, size: 30_000)
        b.receive(.reliable(seq: 4, record: .messagePart(final: false, bytes: plaintext[1...])), on: 1, now: 0)
        b.receive(.reliable(seq: 5, record: .messagePart(final: false, bytes: last[...])), on: 1, now: 0)
        b.receive(.reliable(seq: 6, record: .messagePart(final: true, bytes: whole[...])), on: 1, now: 0)
        got = delivered()
        XCTAssertEqual(got, [message(4, size: 30_000) + last + whole])
        XCTAssertNotEqual(got.first.flatMap(storage), storage(plaintext))
        XCTAssertEqual(whole, message(1, size: 65_000), "the sender's arrays are unchanged")
        XCTAssertEqual(last, message(3, size: 49))
    }

    /// With every link fast, messages are cut into pieces as large as a frame takes; with a
    /// slow link in the session, into `fragmentSize` ones. Both reassemble to the message.
    func testFastLinksOnlyCutsFrameSizedFragments() throws {
        let p = SessionPair()
        p.up(1)
        let big = message(3, size: 150_000)
        let parts: () -> [Int] = {
            p.sentByA.compactMap { e -> Int? in
                if case let .reliable(_, .messagePart(_, bytes)) = e.frame { return bytes.count }
                return nil
            }
        }
        p.a.fastLinksOnly = true
        let large = SessionConfig().fastFragmentSize
        XCTAssertEqual(p.a.fragmentSize, large)
        try p.a.send(big, reliable: true, now: 0)
        p.collect()
        XCTAssertEqual(parts(), [large, large, 150_000 - 2 * large])
        for s in p.sentByA { XCTAssertLessThanOrEqual(s.frame.encode().count, WireLimits.frame) }
        p.settle()
        p.sentByA.removeAll()
        p.a.fastLinksOnly = false
        try p.a.send(big, reliable: true, now: p.now)
        p.collect()
        XCTAssertEqual(parts(), Array(repeating: 16384, count: 9) + [150_000 - 9 * 16384])
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, [big, big])
    }

    /// A fast bulk carrier beside a slow message carrier: file and stream bytes are cut into
    /// frame-sized pieces, messages stay in 16 KiB ones.
    func testAFastBulkCarrierCutsOnlyBulkBytesLarge() throws {
        let p = SessionPair()
        p.up(1)
        p.a.fastBulkCarrier = true
        XCTAssertEqual(p.a.fragmentSize, SessionConfig().fragmentSize)
        XCTAssertEqual(p.a.bulkFragmentSize, SessionConfig().fastFragmentSize)
        p.a.fastLinksOnly = true
        XCTAssertEqual(p.a.fragmentSize, SessionConfig().fastFragmentSize)
        p.a.fastLinksOnly = false
        p.a.fastBulkCarrier = false
        XCTAssertEqual(p.a.bulkFragmentSize, SessionConfig().fragmentSize)
    }

    func testFragmentSizeFollowsRemoteMaxFrame() throws {
        let p = SessionPair()
        p.a.setRemoteMaxFrame(1024)
        p.up(1)
        let big = message(2, size: 5000)
        try p.a.send(big, reliable: true, now: 0)
        p.collect()
        for s in p.sentByA { XCTAssertLessThanOrEqual(s.frame.encode().count, 1024) }
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, [big])
        // Unreliable messages are limited by the remote's frame size.
        XCTAssertThrowsError(try p.a.send([UInt8](repeating: 0, count: 1024), reliable: false, now: 0)) {
            XCTAssertEqual($0 as? SessionError, .messageTooLarge(size: 1024, limit: 1023))
        }
        XCTAssertNoThrow(try p.a.send([UInt8](repeating: 0, count: 1023), reliable: false, now: 0))
    }

    func testSmallestAnnouncedMaxFrameWins() throws {
        // An L2CAP link (4 KiB frames) then a TCP link (65519): fragments keep fitting the
        // L2CAP link, where lanes may move back.
        let p = SessionPair()
        p.a.setRemoteMaxFrame(4096)
        p.up(1)
        p.a.setRemoteMaxFrame(65519)
        XCTAssertEqual(p.a.maxFrame, 4096)
        try p.a.send(message(3, size: 20_000), reliable: true, now: 0)
        p.collect()
        XCTAssertFalse(p.sentByA.isEmpty)
        for s in p.sentByA { XCTAssertLessThanOrEqual(s.frame.encode().count, 4096) }
    }

    func testAcksTrimOutboxAndSendWindowIsRespected() throws {
        var c = SessionConfig()
        c.sendWindow = 4000
        c.fragmentSize = 1000
        let p = SessionPair(a: c, b: c)
        p.up(1)
        try p.a.send(message(0, size: 20_000), reliable: true, now: 0)
        p.collect()
        // The window lets about 4000 bytes out before an ack.
        XCTAssertEqual(p.sentByA.count, 4)
        XCTAssertGreaterThan(p.a.backlogBytes, 0)
        XCTAssertGreaterThan(p.a.unacknowledgedBytes, p.a.backlogBytes)
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, [message(0, size: 20_000)])
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
        XCTAssertEqual(p.a.backlogBytes, 0)
    }

    func testAckEveryN() throws {
        var c = SessionConfig()
        c.ackEvery = 4
        let p = SessionPair(a: c, b: c)
        p.up(1)
        for i in 0..<8 { try p.a.send([UInt8(i)], reliable: true, now: 0) }
        p.run()  // no ticks: only count-triggered acks
        let acks = p.sentByB.compactMap { if case let .ack(n) = $0.frame { return n }; return nil }
        XCTAssertEqual(acks, [4, 8])
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
    }

    func testManyMessagesCompactOutbox() throws {
        let p = SessionPair()
        p.up(1)
        var sent: [[UInt8]] = []
        for round in 0..<5 {
            for i in 0..<700 {
                let m = message(round * 1000 + i, size: 8)
                sent.append(m)
                try p.a.send(m, reliable: true, now: p.now)
            }
            p.settle()
        }
        XCTAssertEqual(p.reliableMessagesB, sent)
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
    }

    // MARK: link changes

    func testLinkChangeDeliversEverythingExactlyOnceInOrder() throws {
        var c = SessionConfig()
        c.fragmentSize = 256
        let p = SessionPair(a: c, b: c)
        p.up(1)
        let msgs = (0..<30).map { message($0, size: 700) }  // 3 fragments each
        for m in msgs { try p.a.send(m, reliable: true, now: 0) }
        // Deliver 7 frames on link 1 (two whole messages and one fragment of the third), then lose the rest.
        XCTAssertEqual(p.run(limit: 7), 7)
        p.dropInFlight(on: 1)
        p.down(1)
        XCTAssertEqual(p.reliableMessagesB, Array(msgs.prefix(2)))
        p.up(2)
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, msgs)
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
        XCTAssertEqual(p.a.liveLinks, [2])
        // The in-flight records really were resent on link 2.
        XCTAssertTrue(p.sentByA.contains { $0.link == 2 && $0.frame == .reliable(seq: 1, record: .messagePart(final: false, bytes: Array(msgs[0].prefix(256))[...])) })
    }

    func testLinkChangeWithSecondLinkAlreadyUp() throws {
        let p = SessionPair()
        p.up(1)
        p.up(2)
        XCTAssertEqual(p.a.activeLink, 1)
        for i in 0..<10 { try p.a.send(message(i, size: 50), reliable: true, now: 0) }
        p.run(limit: 3)
        p.dropInFlight(on: 1)
        p.down(1)
        XCTAssertEqual(p.a.activeLink, 2)
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, (0..<10).map { message($0, size: 50) })
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
    }

    func testLostAcksThenLinkChange() throws {
        var c = SessionConfig()
        c.ackEvery = 2
        let p = SessionPair(a: c, b: c)
        p.up(1)
        p.oneWayToB = [1]  // everything reaches B, no ack reaches A
        for i in 0..<10 { try p.a.send(message(i, size: 20), reliable: true, now: 0) }
        p.settle()
        XCTAssertEqual(p.reliableMessagesB.count, 10)
        XCTAssertGreaterThan(p.a.unacknowledgedBytes, 0)
        p.down(1)
        p.up(2)
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, (0..<10).map { message($0, size: 20) })
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
    }

    func testPreferredLinkSwitchResendsWithoutDuplicates() throws {
        let p = SessionPair()
        p.up(1); p.up(2)
        for i in 0..<5 { try p.a.send([UInt8(i)], reliable: true, now: 0) }
        p.collect()
        p.a.preferredLink = 2
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, (0..<5).map { [UInt8($0)] })
        XCTAssertEqual(p.a.activeLink, 2)
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
    }

    /// Random link failures at random points, in both directions, over many seeds.
    func testRandomLinkChurnIsExactlyOnceInOrder() throws {
        for seed in UInt64(1)...40 {
            var rng = SplitMix64(seed: seed)
            var c = SessionConfig()
            c.fragmentSize = 256
            c.ackEvery = Int.random(in: 1...8, using: &rng)
            c.sendWindow = Int.random(in: 600...6000, using: &rng)
            let p = SessionPair(a: c, b: c)
            var link: LinkID = 1
            p.up(link)
            var sentA: [[UInt8]] = [], sentB: [[UInt8]] = []
            for round in 0..<12 {
                for _ in 0..<Int.random(in: 0...6, using: &rng) {
                    let m = message(sentA.count, size: Int.random(in: 0...900, using: &rng))
                    sentA.append(m)
                    try p.a.send(m, reliable: true, now: p.now)
                }
                if Bool.random(using: &rng) {
                    let m = message(1000 + sentB.count, size: Int.random(in: 0...600, using: &rng))
                    sentB.append(m)
                    try p.b.send(m, reliable: true, now: p.now)
                }
                p.run(limit: Int.random(in: 0...20, using: &rng))
                if round % 3 == 2 || Bool.random(using: &rng) {
                    // The link dies with whatever is on it.
                    p.dropInFlight(on: link)
                    p.down(link)
                    link += 1
                    p.up(link)
                }
                p.now += 10
            }
            p.settle()
            XCTAssertEqual(p.reliableMessagesB, sentA, "seed \(seed)")
            XCTAssertEqual(p.reliableMessagesA, sentB, "seed \(seed)")
            XCTAssertEqual(p.a.unacknowledgedBytes, 0, "seed \(seed)")
            XCTAssertEqual(p.b.unacknowledgedBytes, 0, "seed \(seed)")
            XCTAssertTrue(SessionPair.violations(p.eventsA + p.eventsB).isEmpty, "seed \(seed)")
        }
    }

    func testReplayedReliableFramesAreNotDeliveredTwice() throws {
        let p = SessionPair()
        p.up(1)
        for i in 0..<5 { try p.a.send([UInt8(i)], reliable: true, now: 0) }
        p.settle()
        let reliable = p.sentByA.filter { if case .reliable = $0.frame { return true }; return false }
        XCTAssertEqual(reliable.count, 5)
        for r in reliable { p.b.receive(r.frame, on: 1, now: 0) }
        for r in reliable.reversed() { p.b.receive(r.frame, on: 1, now: 0) }
        p.collect()
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, (0..<5).map { [UInt8($0)] })
        XCTAssertTrue(SessionPair.violations(p.eventsB).isEmpty)
    }

    func testOutOfOrderAcrossTwoLinksIsReordered() {
        var b = SessionCore(role: .responder)
        b.linkUp(1, now: 0); b.linkUp(2, now: 0)
        _ = b.takeOutputs()
        b.receive(.reliable(seq: 3, record: .messagePart(final: true, bytes: [3])), on: 2, now: 1)
        b.receive(.reliable(seq: 2, record: .messagePart(final: false, bytes: [2])), on: 2, now: 1)
        XCTAssertTrue(b.takeOutputs().isEmpty)
        b.receive(.reliable(seq: 1, record: .messagePart(final: true, bytes: [1])), on: 1, now: 2)
        b.receive(.reliable(seq: 2, record: .messagePart(final: false, bytes: [2])), on: 1, now: 2)  // duplicate
        b.receive(.reliable(seq: 4, record: .messagePart(final: true, bytes: [4])), on: 1, now: 2)
        let msgs = b.takeOutputs().compactMap { o -> [UInt8]? in
            if case let .event(.message(m, true)) = o { return m }; return nil
        }
        XCTAssertEqual(msgs, [[1], [2, 3], [4]])
        b.tick(now: 3)
        XCTAssertTrue(b.takeOutputs().contains(.transmit(link: 1, frame: .ack(upTo: 4))))
    }

    func testReorderBufferLimit() {
        var c = SessionConfig()
        c.maxReorder = 4
        var b = SessionCore(role: .responder, config: c)
        b.linkUp(1, now: 0)
        for s in UInt64(2)...6 { b.receive(.reliable(seq: s, record: .messagePart(final: true, bytes: [])), on: 1, now: 0) }
        XCTAssertEqual(SessionPair.violations(b.takeOutputs().compactMap { if case let .event(e) = $0 { return e }; return nil }).count, 1)
    }

    func testAckForNeverSentSeqIsProtocolViolation() throws {
        var a = SessionCore(role: .initiator)
        a.linkUp(1, now: 0)
        a.receive(.ack(upTo: 1), on: 1, now: 0)
        XCTAssertEqual(SessionPair.violations(a.takeOutputs().compactMap { if case let .event(e) = $0 { return e }; return nil }).count, 1)
        try a.send([1], reliable: true, now: 0)
        _ = a.takeOutputs()
        a.receive(.ack(upTo: 1), on: 1, now: 0)
        XCTAssertTrue(a.takeOutputs().isEmpty)
        XCTAssertEqual(a.unacknowledgedBytes, 0)
        a.receive(.ack(upTo: 0), on: 1, now: 0)  // old ack: harmless
        a.receive(.ack(upTo: 2), on: 1, now: 0)
        XCTAssertEqual(SessionPair.violations(a.takeOutputs().compactMap { if case let .event(e) = $0 { return e }; return nil }).count, 1)
    }

    func testUnreliableIsNeverRetransmitted() throws {
        let p = SessionPair()
        p.up(1)
        try p.a.send([9, 9], reliable: false, now: 0)
        try p.a.send([1], reliable: true, now: 0)
        p.dropInFlight(on: 1)
        p.down(1)
        p.up(2)
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, [[1]])
        XCTAssertEqual(p.unreliableMessagesB, [])
        let unreliable = p.sentByA.filter { if case .unreliable = $0.frame { return true }; return false }
        XCTAssertEqual(unreliable.map(\.link), [1])
        // And delivered once when the link works.
        try p.a.send([7], reliable: false, now: 0)
        p.settle()
        XCTAssertEqual(p.unreliableMessagesB, [[7]])
    }

    func testLinkIDsAreReportedOldestFirst() {
        var a = SessionCore(role: .initiator)
        a.linkUp(5, now: 0); a.linkUp(3, now: 0); a.linkUp(5, now: 0)
        XCTAssertEqual(a.liveLinks, [5, 3])
        XCTAssertEqual(a.activeLink, 5)
        a.preferredLink = 3
        XCTAssertEqual(a.activeLink, 3)
        a.linkDown(3)
        XCTAssertEqual(a.activeLink, 5)
        XCTAssertNil(a.preferredLink)
        a.linkDown(99)  // unknown: ignored
        XCTAssertEqual(a.liveLinks, [5])
    }

    // MARK: keepalive

    func testKeepalivePingsEveryIntervalAndNoDeathWhilePongsArrive() {
        var c = SessionConfig()
        c.keepaliveInterval = .milliseconds(1000)
        c.deadAfter = .milliseconds(3000)
        let p = SessionPair(a: c, b: c)
        p.up(1)
        p.advance(by: 10_000)
        let pingTimes = p.sentByA.compactMap { e -> UInt64? in if case .ping = e.frame { return e.at }; return nil }
        XCTAssertEqual(pingTimes, stride(from: UInt64(1000), through: 10_000, by: 1000).map { $0 })
        XCTAssertFalse(p.eventsA.contains(.linkDead(1)))
        XCTAssertFalse(p.eventsB.contains(.linkDead(1)))
        XCTAssertEqual(p.a.liveLinks, [1])
        XCTAssertEqual(p.a.roundTrip(of: 1), 0)
    }

    func testOnlyOneSideTicking() {
        // B never ticks, it only answers: A still sees pongs and keeps the link.
        var c = SessionConfig()
        c.keepaliveInterval = .milliseconds(500)
        c.deadAfter = .milliseconds(1500)
        var a = SessionCore(role: .initiator, config: c)
        var b = SessionCore(role: .responder, config: c)
        a.linkUp(1, now: 0); b.linkUp(1, now: 0)
        var dead = false
        for t in stride(from: UInt64(50), through: 20_000, by: 50) {
            a.tick(now: t)
            for o in a.takeOutputs() {
                if case let .transmit(_, f) = o { b.receive(f, on: 1, now: t) }
                if case .event(.linkDead) = o { dead = true }
            }
            for o in b.takeOutputs() { if case let .transmit(_, f) = o { a.receive(f, on: 1, now: t) } }
        }
        XCTAssertFalse(dead)
    }

    func testSilentLinkIsDeclaredDead() throws {
        var c = SessionConfig()
        c.keepaliveInterval = .milliseconds(1000)
        c.deadAfter = .milliseconds(3000)
        c.suspectAfter = .milliseconds(400)
        let p = SessionPair(a: c, b: c)
        p.up(1)
        p.up(2)
        p.cut = [1]  // nothing crosses link 1 any more
        try p.a.send([1], reliable: true, now: 0)
        p.advance(by: 2900)
        XCTAssertFalse(p.eventsA.contains(.linkDead(1)))
        p.advance(by: 100)
        XCTAssertEqual(p.eventsA.filter { $0 == .linkDead(1) }.count, 1)
        XCTAssertEqual(p.eventsB.filter { $0 == .linkDead(1) }.count, 1)
        XCTAssertEqual(p.a.liveLinks, [2])
        p.advance(by: 5000)
        XCTAssertEqual(p.eventsA.filter { $0 == .linkDead(1) }.count, 1)
        XCTAssertFalse(p.eventsA.contains(.linkDead(2)))
        // The message lost on link 1 went out again on link 2.
        XCTAssertEqual(p.reliableMessagesB, [[1]])
        // While it carried the message, the quiet link was probed every suspectAfter/2 and
        // suspected after 400 ms (the message moved to link 2 then, long before the link was
        // declared dead); afterwards it was probed once per keepalive interval.
        let pings1 = p.sentByA.filter { if case .ping = $0.frame { return $0.link == 1 }; return false }.map(\.at)
        XCTAssertEqual(pings1, [200, 400, 1400, 2400])
        XCTAssertTrue(p.eventsA.contains(.linkSuspected(1, silentFor: 400)), "\(p.eventsA)")
    }

    func testRoundTripFromPong() {
        var a = SessionCore(role: .initiator)
        a.linkUp(1, now: 0)
        a.tick(now: 1000)
        let out = a.takeOutputs()
        guard case let .transmit(1, .ping(token))? = out.first else { return XCTFail("expected a ping, got \(out)") }
        a.receive(.pong(token: token &+ 1), on: 1, now: 1050)  // not ours
        XCTAssertTrue(a.takeOutputs().isEmpty)
        XCTAssertNil(a.roundTrip(of: 1))
        a.receive(.pong(token: token), on: 1, now: 1080)
        XCTAssertEqual(a.takeOutputs(), [.event(.roundTrip(link: 1, millis: 80))])
        XCTAssertEqual(a.roundTrip(of: 1), 80)
        a.receive(.pong(token: token), on: 1, now: 1090)  // a second copy is ignored
        XCTAssertTrue(a.takeOutputs().isEmpty)
    }

    func testPingIsAnsweredOnTheSameLink() {
        var b = SessionCore(role: .responder)
        b.linkUp(1, now: 0); b.linkUp(2, now: 0)
        b.receive(.ping(token: 77), on: 2, now: 5)
        XCTAssertEqual(b.takeOutputs(), [.transmit(link: 2, frame: .pong(token: 77))])
    }

    // MARK: limits

    func testMessageTooLarge() throws {
        var c = SessionConfig()
        c.maxMessageSize = 1000
        var a = SessionCore(role: .initiator, config: c)
        a.linkUp(1, now: 0)
        XCTAssertThrowsError(try a.send([UInt8](repeating: 0, count: 1001), reliable: true, now: 0)) {
            XCTAssertEqual($0 as? SessionError, .messageTooLarge(size: 1001, limit: 1000))
        }
        XCTAssertNoThrow(try a.send([UInt8](repeating: 0, count: 1000), reliable: true, now: 0))
        XCTAssertThrowsError(try a.send([UInt8](repeating: 0, count: WireLimits.frame), reliable: false, now: 0)) {
            XCTAssertEqual($0 as? SessionError, .messageTooLarge(size: WireLimits.frame, limit: WireLimits.frame - 1))
        }
    }

    func testReassemblyBeyondMaxMessageSizeIsProtocolViolation() {
        var c = SessionConfig()
        c.maxMessageSize = 1000
        var b = SessionCore(role: .responder, config: c)
        b.linkUp(1, now: 0)
        b.receive(.reliable(seq: 1, record: .messagePart(final: false, bytes: [UInt8](repeating: 1, count: 600)[...])), on: 1, now: 0)
        b.receive(.reliable(seq: 2, record: .messagePart(final: true, bytes: [UInt8](repeating: 1, count: 600)[...])), on: 1, now: 0)
        let events = b.takeOutputs().compactMap { o -> SessionEvent? in if case let .event(e) = o { return e }; return nil }
        XCTAssertEqual(SessionPair.violations(events).count, 1)
        XCTAssertFalse(events.contains { if case .message = $0 { return true }; return false })
    }

    func testBacklogFull() throws {
        var c = SessionConfig()
        c.sendWindow = 1000
        c.maxBacklog = 2000
        let p = SessionPair(a: c, b: c)
        p.up(1)
        var accepted = 0
        var error: Error?
        for i in 0..<100 {
            do { try p.a.send(message(i, size: 500), reliable: true, now: 0); accepted += 1 } catch let e { error = e; break }
        }
        guard case let .backlogFull(bytes, limit)? = error as? SessionError else { return XCTFail("expected backlogFull, got \(String(describing: error))") }
        XCTAssertEqual(limit, 2000)
        XCTAssertGreaterThan(bytes, 2000)
        XCTAssertLessThan(accepted, 10)
        XCTAssertFalse(SessionError.backlogFull(bytes: bytes, limit: limit).description.isEmpty)
        // Once the peer catches up, sends are accepted again and everything arrives.
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, (0..<accepted).map { message($0, size: 500) })
        XCTAssertNoThrow(try p.a.send([1], reliable: true, now: 0))
    }

    func testLeave() throws {
        let p = SessionPair()
        p.up(1); p.up(2)
        p.a.leave(reason: .leaving, text: "bye", now: 0)
        XCTAssertTrue(p.a.isClosed)
        p.run()
        XCTAssertEqual(p.eventsB.first, .remoteLeft(reason: .leaving, text: "bye"))
        XCTAssertTrue(p.b.isClosed)
        XCTAssertEqual(p.sentByA.filter { if case .close = $0.frame { return true }; return false }.map(\.link), [1, 2])
        XCTAssertThrowsError(try p.a.send([1], reliable: true, now: 0)) { XCTAssertEqual($0 as? SessionError, .closed) }
        XCTAssertThrowsError(try p.b.openStream(name: "x", now: 0)) { XCTAssertEqual($0 as? SessionError, .closed) }
    }

    func testInviteFramesIgnoredInSession() {
        var b = SessionCore(role: .responder)
        b.linkUp(1, now: 0)
        b.receive(.invite(id: 1, timeoutMillis: 1, context: []), on: 1, now: 0)
        b.receive(.inviteReply(id: 1, answer: .accepted), on: 1, now: 0)
        b.receive(.reliable(seq: 1, record: .messagePart(final: true, bytes: [1])), on: 9, now: 0)  // unknown link
        XCTAssertTrue(b.takeOutputs().isEmpty)
    }

    // MARK: smoke

    func test64SessionPairsSmoke() throws {
        var pairs = (0..<64).map { _ in SessionPair() }
        for (i, p) in pairs.enumerated() {
            p.up(LinkID(i + 1))
            try p.a.send(message(i, size: 100 + i * 100), reliable: true, now: 0)
            try p.b.send(message(1000 + i, size: 50), reliable: true, now: 0)
        }
        for p in pairs { p.settle() }
        for (i, p) in pairs.enumerated() {
            XCTAssertEqual(p.reliableMessagesB, [message(i, size: 100 + i * 100)])
            XCTAssertEqual(p.reliableMessagesA, [message(1000 + i, size: 50)])
            XCTAssertEqual(p.a.unacknowledgedBytes, 0)
        }
        pairs.removeAll()
    }
}

/// Regressions found by review of the core.
final class SessionCoreRegressionTests: XCTestCase {
    func testSameLinkIDComingBackResends() throws {
        let p = SessionPair()
        p.up(1)
        for i in 0..<3 { try p.a.send([UInt8(i)], reliable: true, now: 0) }
        p.dropInFlight(on: 1)
        p.down(1)
        p.up(1)
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, [[0], [1], [2]])
    }

    func testSlowPongStillMeasured() {
        var c = SessionConfig(); c.keepaliveInterval = .milliseconds(100); c.deadAfter = .milliseconds(10_000)
        var a = SessionCore(role: .initiator, config: c)
        a.linkUp(1, now: 0)
        var rtts: [UInt64] = []
        var pending: [(UInt64, UInt64)] = []  // (deliverAt, token)
        for t in stride(from: UInt64(10), through: 5000, by: 10) {
            a.tick(now: t)
            for o in a.takeOutputs() { if case let .transmit(_, .ping(tok)) = o { pending.append((t + 150, tok)) } }
            for (at, tok) in pending where at == t { a.receive(.pong(token: tok), on: 1, now: t) }
            for o in a.takeOutputs() { if case let .event(.roundTrip(_, ms)) = o { rtts.append(ms) } }
        }
        XCTAssertFalse(rtts.isEmpty, "an RTT above keepaliveInterval must still be measured")
        XCTAssertTrue(rtts.allSatisfy { $0 == 150 }, "\(rtts)")
    }
}
