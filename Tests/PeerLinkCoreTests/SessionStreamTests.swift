import XCTest
import PeerLinkWire
@testable import PeerLinkCore

final class SessionStreamTests: XCTestCase {
    func events(_ core: inout SessionCore) -> [SessionEvent] {
        core.takeOutputs().compactMap { if case let .event(e) = $0 { return e }; return nil }
    }

    func streamBytes(_ events: [SessionEvent], _ id: UInt32) -> [UInt8] {
        events.flatMap { e -> [UInt8] in if case let .streamData(s, b) = e, s == id { return Array(b) }; return [] }
    }

    func testStreamOpenWriteClose() throws {
        let p = SessionPair()
        p.up(1)
        let id = try p.a.openStream(name: "chat", now: 0)
        XCTAssertEqual(id, 1)
        XCTAssertEqual(p.a.credit(of: id), 0)
        XCTAssertThrowsError(try p.a.write([1], to: id, now: 0)) { XCTAssertEqual($0 as? SessionError, .noCredit(stream: 1, available: 0)) }
        p.settle()
        XCTAssertEqual(p.eventsB, [.streamOpened(stream: 1, name: "chat")])
        XCTAssertEqual(p.eventsA, [.streamWritable(stream: 1)])
        XCTAssertEqual(p.a.credit(of: id), Int(SessionConfig().streamWindow))
        let data = message(5, size: 40_000)  // larger than a fragment
        try p.a.write(data, to: id, now: 0)
        p.a.close(stream: id, cancel: false, now: 0)
        p.settle()
        XCTAssertEqual(streamBytes(p.eventsB, 1), data)
        XCTAssertEqual(p.eventsB.last, .streamClosed(stream: 1, status: .finished))
        XCTAssertNil(p.a.credit(of: id))
        XCTAssertThrowsError(try p.a.write([1], to: id, now: 0)) { XCTAssertEqual($0 as? SessionError, .unknownStream(1)) }
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
    }

    func testLongNameRefused() {
        var a = SessionCore(role: .initiator)
        XCTAssertThrowsError(try a.openStream(name: String(repeating: "n", count: 256), now: 0))
        XCTAssertNoThrow(try a.openStream(name: String(repeating: "n", count: 255), now: 0))
        XCTAssertThrowsError(try a.offerResource(name: "x", size: 1, sha256: [1, 2], now: 0))
    }

    func testStreamIDParity() throws {
        var a = SessionCore(role: .initiator)
        var b = SessionCore(role: .responder)
        XCTAssertEqual(try a.openStream(name: "1", now: 0), 1)
        XCTAssertEqual(try a.offerResource(name: "r", size: 1, sha256: [UInt8](repeating: 0, count: 32), now: 0), 3)
        XCTAssertEqual(try a.openStream(name: "3", now: 0), 5)
        XCTAssertEqual(try b.openStream(name: "2", now: 0), 2)
        XCTAssertEqual(try b.openStream(name: "4", now: 0), 4)
    }

    func testRemoteStreamWithWrongParityIsProtocolViolation() {
        var b = SessionCore(role: .responder)
        b.linkUp(1, now: 0)
        b.receive(.reliable(seq: 1, record: .streamOpen(stream: 2, name: "mine")), on: 1, now: 0)
        XCTAssertEqual(SessionPair.violations(events(&b)).count, 1)
        b.receive(.reliable(seq: 2, record: .resourceOffer(stream: 4, size: 1, sha256: [UInt8](repeating: 0, count: 32), name: "r")), on: 1, now: 0)
        XCTAssertEqual(SessionPair.violations(events(&b)).count, 1)

        var a = SessionCore(role: .initiator)
        a.linkUp(1, now: 0)
        a.receive(.reliable(seq: 1, record: .streamOpen(stream: 1, name: "odd")), on: 1, now: 0)
        XCTAssertEqual(SessionPair.violations(events(&a)).count, 1)
        a.receive(.reliable(seq: 2, record: .streamOpen(stream: 0, name: "zero")), on: 1, now: 0)  // nobody allocates 0
        XCTAssertEqual(SessionPair.violations(events(&a)).count, 1)
        a.receive(.reliable(seq: 3, record: .streamOpen(stream: 2, name: "even")), on: 1, now: 0)
        let ev = events(&a)
        XCTAssertTrue(SessionPair.violations(ev).isEmpty)
        XCTAssertTrue(ev.contains(.streamOpened(stream: 2, name: "even")))
    }

    func testReusedRemoteStreamIDIsProtocolViolation() {
        var b = SessionCore(role: .responder)
        b.linkUp(1, now: 0)
        b.receive(.reliable(seq: 1, record: .streamOpen(stream: 1, name: "a")), on: 1, now: 0)
        XCTAssertTrue(SessionPair.violations(events(&b)).isEmpty)
        b.receive(.reliable(seq: 2, record: .streamOpen(stream: 1, name: "again")), on: 1, now: 0)
        XCTAssertEqual(SessionPair.violations(events(&b)).count, 1)
    }

    func testDataBeyondCreditFromHostilePeerIsProtocolViolation() throws {
        var c = SessionConfig()
        c.streamWindow = 1024
        let p = SessionPair(a: c, b: c)
        p.up(1)
        let id = try p.a.openStream(name: "s", now: 0)
        p.settle()
        XCTAssertEqual(p.a.credit(of: id), 1024)
        // The honest sender cannot exceed its credit.
        XCTAssertThrowsError(try p.a.write([UInt8](repeating: 0, count: 1025), to: id, now: 0)) {
            XCTAssertEqual($0 as? SessionError, .noCredit(stream: id, available: 1024))
        }
        // It writes 1000 legitimately (bulk lane, seq 1)...
        try p.a.write([UInt8](repeating: 1, count: 1000), to: id, now: 0)
        p.settle()
        XCTAssertTrue(SessionPair.violations(p.eventsB).isEmpty)
        // ...then a hostile bulk frame with seq 2 carries 25 bytes more than the 24 left.
        p.b.receive(.bulk(seq: 2, record: .streamData(stream: id, bytes: [UInt8](repeating: 2, count: 25)[...])), on: 1, now: 0)
        p.collect()
        XCTAssertEqual(SessionPair.violations(p.eventsB).count, 1)
        XCTAssertEqual(streamBytes(p.eventsB, id).count, 1000)
    }

    func testHostileDataInOneFrameAboveWindow() {
        var c = SessionConfig()
        c.streamWindow = 100
        var b = SessionCore(role: .responder, config: c)
        b.linkUp(1, now: 0)
        b.receive(.reliable(seq: 1, record: .streamOpen(stream: 1, name: "s")), on: 1, now: 0)
        b.receive(.reliable(seq: 2, record: .streamData(stream: 1, bytes: [UInt8](repeating: 0, count: 101)[...])), on: 1, now: 0)
        let ev = events(&b)
        XCTAssertEqual(SessionPair.violations(ev).count, 1)
        XCTAssertFalse(ev.contains { if case .streamData = $0 { return true }; return false })
    }

    func testCreditReturnedAfterConsumed() throws {
        var c = SessionConfig()
        c.streamWindow = 1024
        let p = SessionPair(a: c, b: c)
        p.up(1)
        let id = try p.a.openStream(name: "s", now: 0)
        p.settle()
        try p.a.write([UInt8](repeating: 1, count: 1024), to: id, now: 0)
        XCTAssertEqual(p.a.credit(of: id), 0)
        p.settle()
        XCTAssertEqual(streamBytes(p.eventsB, id).count, 1024)
        // A reader that takes a second per half window (far beyond two round trips) keeps
        // the window as it is: credit comes back as consumed, no more.
        p.b.consumed(100, of: id, now: 1000)  // below half the window: nothing yet
        p.settle()
        XCTAssertEqual(p.a.credit(of: id), 0)
        p.b.consumed(500, of: id, now: 1000)  // 600 in total
        p.settle()
        XCTAssertEqual(p.a.credit(of: id), 600)
        XCTAssertEqual(p.eventsA.filter { $0 == .streamWritable(stream: id) }.count, 2)
        try p.a.write([UInt8](repeating: 3, count: 600), to: id, now: 0)
        p.settle()
        XCTAssertTrue(SessionPair.violations(p.eventsB).isEmpty)
        XCTAssertEqual(streamBytes(p.eventsB, id).count, 1624)
    }

    /// A stream from a to b with a 1024-byte first window that may grow to 4096; `fast` sets
    /// the flag the edge sets for TCP or Wi-Fi links.
    func windowedStream(fast: Bool) throws -> (SessionPair, UInt32) {
        var c = SessionConfig()
        c.streamWindow = 1024
        c.maxStreamWindow = 4096
        let p = SessionPair(a: c, b: c)
        p.up(1)
        p.b.fastLinksOnly = fast
        let id = try p.a.openStream(name: "s", now: 0)
        p.settle()
        return (p, id)
    }

    /// The writer sends all its credit; the reader consumes `count` bytes at `now`.
    func sendCreditAndConsume(_ p: SessionPair, _ id: UInt32, _ count: Int, now: UInt64) throws {
        try p.a.write([UInt8](repeating: 7, count: p.a.credit(of: id) ?? 0), to: id, now: now)
        p.settle()
        p.b.consumed(count, of: id, now: now)
        p.settle()
    }

    /// Half a window consumed within two round trips of the previous grant: the window held
    /// the writer back, so it doubles (the grant carries the increase) up to `maxStreamWindow`.
    func testWindowGrowsWhileTheReaderKeepsUp() throws {
        let (p, id) = try windowedStream(fast: true)
        XCTAssertEqual(p.b.window(of: id), 1024)
        // Consumed at once (well within the 2 ms bound): 1024 → 2048 → 4096, then capped.
        try sendCreditAndConsume(p, id, 1024, now: 0)
        XCTAssertEqual(p.b.window(of: id), 2048)
        XCTAssertEqual(p.a.credit(of: id), 1024 + 1024)
        try sendCreditAndConsume(p, id, 2048, now: 0)
        XCTAssertEqual(p.b.window(of: id), 4096)
        XCTAssertEqual(p.a.credit(of: id), 2048 + 2048)
        try sendCreditAndConsume(p, id, 4096, now: 0)
        XCTAssertEqual(p.b.window(of: id), 4096, "never past maxStreamWindow")
        XCTAssertEqual(p.a.credit(of: id), 4096)
        XCTAssertTrue(SessionPair.violations(p.eventsA + p.eventsB).isEmpty, "the grown credit is honoured")
        XCTAssertEqual(streamBytes(p.eventsB, id).count, 1024 + 2048 + 4096)
    }

    /// A reader slower than two round trips per half window keeps the first window.
    func testASlowReaderKeepsTheFirstWindow() throws {
        let (p, id) = try windowedStream(fast: true)
        var now: UInt64 = 0
        for _ in 0..<4 {
            now += 50  // every half window takes 50 ms: far more than two round trips here
            try sendCreditAndConsume(p, id, 1024, now: now)
            XCTAssertEqual(p.b.window(of: id), 1024)
            XCTAssertEqual(p.a.credit(of: id), 1024)
        }
    }

    /// On slow links (Bluetooth: neither flag set) the window stays as granted at open, however
    /// quickly the reader consumes.
    func testTheWindowDoesNotGrowWithoutAFastCarrier() throws {
        let (p, id) = try windowedStream(fast: false)
        for _ in 0..<3 {
            try sendCreditAndConsume(p, id, 1024, now: 0)
            XCTAssertEqual(p.b.window(of: id), 1024)
            XCTAssertEqual(p.a.credit(of: id), 1024)
        }
        p.b.fastBulkCarrier = true  // a Wi-Fi Direct group took bulk
        try sendCreditAndConsume(p, id, 1024, now: 0)
        XCTAssertEqual(p.b.window(of: id), 2048)
    }

    func testLongStreamWithFlowControl() throws {
        var c = SessionConfig()
        c.streamWindow = 4096
        c.fragmentSize = 1000
        let p = SessionPair(a: c, b: c)
        p.up(1)
        let id = try p.a.openStream(name: "bulk", now: 0)
        p.settle()
        let data = message(9, size: 100_000)
        var offset = 0, consumedUpTo = 0
        for _ in 0..<10_000 where offset < data.count || consumedUpTo < data.count {
            let n = min(p.a.credit(of: id) ?? 0, data.count - offset)
            if n > 0 { try p.a.write(Array(data[offset..<offset + n]), to: id, now: 0); offset += n }
            p.settle()
            let got = streamBytes(p.eventsB, id).count
            if got > consumedUpTo { p.b.consumed(got - consumedUpTo, of: id, now: 0); consumedUpTo = got }
            p.settle()
        }
        XCTAssertEqual(streamBytes(p.eventsB, id), data)
        XCTAssertTrue(SessionPair.violations(p.eventsA + p.eventsB).isEmpty)
    }

    func testReceiverCancelsStream() throws {
        let p = SessionPair()
        p.up(1)
        let id = try p.a.openStream(name: "s", now: 0)
        p.settle()
        p.b.close(stream: id, cancel: true, now: 0)
        p.settle()
        XCTAssertTrue(p.eventsA.contains(.streamClosed(stream: id, status: .cancelledByReceiver)))
        XCTAssertNil(p.a.credit(of: id))
        // Data already on its way after the cancel is dropped quietly.
        p.b.receive(.reliable(seq: 2, record: .streamData(stream: id, bytes: [1])), on: 1, now: 0)
        p.collect()
        XCTAssertTrue(SessionPair.violations(p.eventsB).isEmpty)
        XCTAssertEqual(streamBytes(p.eventsB, id), [])
    }

    func testSenderCancelsStream() throws {
        let p = SessionPair()
        p.up(1)
        let id = try p.a.openStream(name: "s", now: 0)
        p.settle()
        p.a.close(stream: id, cancel: true, now: 0)
        p.settle()
        XCTAssertEqual(p.eventsB.last, .streamClosed(stream: id, status: .cancelledBySender))
    }

    func testResourceTransfer() throws {
        var c = SessionConfig()
        c.streamWindow = 1024
        let p = SessionPair(a: c, b: c)
        p.up(1)
        let sha = (0..<32).map { UInt8($0) }
        let content = message(3, size: 3000)
        let id = try p.a.offerResource(name: "photo.jpg", size: 3000, sha256: sha, now: 0)
        p.settle()
        XCTAssertEqual(p.eventsB, [.resourceOffered(stream: id, name: "photo.jpg", size: 3000, sha256: sha)])
        XCTAssertThrowsError(try p.a.write([1], to: id, now: 0))  // no credit before acceptance
        XCTAssertThrowsError(try p.b.acceptResource(id + 2, offset: 0, now: 0)) { XCTAssertEqual($0 as? SessionError, .unknownStream(id + 2)) }
        try p.b.acceptResource(id, offset: 1000, now: 0)
        XCTAssertThrowsError(try p.b.acceptResource(id, offset: 1000, now: 0))  // only once
        p.settle()
        XCTAssertEqual(p.eventsA, [.resourceAccepted(stream: id, offset: 1000)])
        XCTAssertEqual(p.a.credit(of: id), 1024)
        // Send the remaining 2000 bytes from the resume offset, within credit.
        var offset = 1000, received = 0
        while offset < content.count {
            let n = min(p.a.credit(of: id) ?? 0, content.count - offset)
            XCTAssertGreaterThan(n, 0)
            try p.a.write(Array(content[offset..<offset + n]), to: id, now: 0)
            offset += n
            p.settle()
            let got = streamBytes(p.eventsB, id).count
            p.b.consumed(got - received, of: id, now: 0)
            received = got
            p.settle()
        }
        p.a.close(stream: id, cancel: false, now: 0)
        p.settle()
        XCTAssertEqual(streamBytes(p.eventsB, id), Array(content[1000...]))
        XCTAssertEqual(p.eventsB.last, .streamClosed(stream: id, status: .finished))
        XCTAssertFalse(p.eventsA.contains { if case .resourceResult = $0 { return true }; return false })
        p.b.finishResource(id, ok: true, now: 0)
        p.settle()
        XCTAssertEqual(p.eventsA.last, .resourceResult(stream: id, ok: true))
        XCTAssertTrue(SessionPair.violations(p.eventsA + p.eventsB).isEmpty)
        XCTAssertEqual(p.a.unacknowledgedBytes, 0)
        XCTAssertEqual(p.b.unacknowledgedBytes, 0)
    }

    /// A keyed offer (minor 4): the bytes go before any digest, the digest follows the last
    /// byte on the same lane and arrives before the close.
    func testKeyedResourceDigestFollowsTheLastByte() throws {
        let p = SessionPair()
        p.a.sharedMinor = 4
        p.b.sharedMinor = 4
        p.up(1)
        let key = [UInt8](repeating: 5, count: 32), sha = [UInt8](repeating: 6, count: 32)
        let id = try p.a.offerResource(name: "big.iso", size: 3, key: key, now: 0)
        p.settle()
        XCTAssertEqual(p.eventsB, [.resourceOfferedKeyed(stream: id, name: "big.iso", size: 3, key: key)])
        try p.b.acceptResource(id, offset: 0, now: 0)
        p.settle()
        try p.a.write([1, 2, 3], to: id, now: 0)
        try p.a.sendResourceDigest(id, sha256: sha, now: 0)
        p.a.close(stream: id, cancel: false, now: 0)
        p.settle()
        XCTAssertEqual(Array(p.eventsB.dropFirst()), [.streamData(stream: id, bytes: [1, 2, 3]), .resourceDigest(stream: id, sha256: sha),
                                   .streamClosed(stream: id, status: .finished)])
        p.b.finishResource(id, ok: true, now: 0)
        p.settle()
        XCTAssertEqual(p.eventsA.last, .resourceResult(stream: id, ok: true))
        XCTAssertTrue(SessionPair.violations(p.eventsA + p.eventsB).isEmpty)
    }

    /// A peer before minor 4 never gets a keyed offer: the sender is told to offer the digest.
    func testKeyedOfferNeedsMinor4() {
        var a = SessionCore(role: .initiator)
        a.sharedMinor = 3
        XCTAssertThrowsError(try a.offerResource(name: "f", size: 1, key: [UInt8](repeating: 0, count: 32), now: 0)) {
            guard case .unsupportedByPeer? = $0 as? SessionError else { return XCTFail("\($0)") }
        }
        a.sharedMinor = 4
        XCTAssertNoThrow(try a.offerResource(name: "f", size: 1, key: [UInt8](repeating: 0, count: 32), now: 0))
    }

    /// A digest for a resource the receiver has not accepted (or never heard of) tells nothing.
    func testADigestForAnUnacceptedResourceIsDropped() throws {
        var b = SessionCore(role: .responder)
        b.sharedMinor = 4
        b.linkUp(1, now: 0)
        b.receive(.reliable(seq: 1, record: .resourceOfferKeyed(stream: 1, size: 1, key: [UInt8](repeating: 0, count: 32), name: "f")), on: 1, now: 0)
        b.receive(.bulk(seq: 1, record: .resourceDigest(stream: 1, sha256: [UInt8](repeating: 1, count: 32))), on: 1, now: 0)
        b.receive(.bulk(seq: 2, record: .resourceDigest(stream: 9, sha256: [UInt8](repeating: 1, count: 32))), on: 1, now: 0)
        XCTAssertEqual(events(&b), [.resourceOfferedKeyed(stream: 1, name: "f", size: 1, key: [UInt8](repeating: 0, count: 32))])
    }

    func testResourceRejectedByHash() throws {
        let p = SessionPair()
        p.up(1)
        let id = try p.a.offerResource(name: "f", size: 1, sha256: [UInt8](repeating: 9, count: 32), now: 0)
        p.settle()
        try p.b.acceptResource(id, offset: 0, now: 0)
        p.settle()
        try p.a.write([42], to: id, now: 0)
        p.a.close(stream: id, cancel: false, now: 0)
        p.settle()
        p.b.finishResource(id, ok: false, now: 0)
        p.settle()
        XCTAssertEqual(p.eventsA.last, .resourceResult(stream: id, ok: false))
    }

    /// The receiver can still fail a resource after the sender wrote its last byte and closed
    /// (its disk filled, or a write failed): the sender must hear of it, not wait for a
    /// RESOURCE_RESULT that never comes (seen as a `sendResource` that hung forever).
    func testAReceiversRefusalAfterTheSenderClosedReachesTheSender() throws {
        let p = SessionPair()
        p.a.sharedMinor = 1
        p.b.sharedMinor = 1
        p.up(1)
        let id = try p.a.offerResource(name: "f", size: 4, sha256: [UInt8](repeating: 9, count: 32), now: 0)
        p.settle()
        try p.b.acceptResource(id, offset: 0, now: 0)
        p.settle()
        try p.a.write([1, 2, 3, 4], to: id, now: 0)
        p.a.close(stream: id, cancel: false, now: 0)
        p.settle()
        XCTAssertNil(p.a.credit(of: id), "nothing more to write")
        p.b.refuseResource(id, error: .diskFull(held: 2, size: 4), now: 0)
        p.settle()
        XCTAssertTrue(p.eventsA.contains(.resourceError(stream: id, error: .diskFull(held: 2, size: 4))))
        XCTAssertEqual(p.eventsA.last, .streamClosed(stream: id, status: .cancelledByReceiver))
        // A verdict for a resource that already ended, or was never offered, is ignored.
        p.b.finishResource(id, ok: true, now: 0)
        p.settle()
        XCTAssertEqual(p.eventsA.last, .streamClosed(stream: id, status: .cancelledByReceiver))
    }

    func testRefusalCarriesItsReasonOnlyToAPeerThatKnowsTheRecord() throws {
        for minor: UInt8 in [0, 1] {
            let p = SessionPair()
            p.a.sharedMinor = minor
            p.b.sharedMinor = minor
            p.up(1)
            let id = try p.a.offerResource(name: "big", size: 32 << 20, sha256: [UInt8](repeating: 9, count: 32), now: 0)
            p.settle()
            p.b.refuseResource(id, error: .noSpace(needed: 32 << 20, available: 16 << 20), now: 0)
            p.settle()
            let sentError = p.sentByB.contains { if case .bulk(_, .resourceError) = $0.frame { return true }; if case .reliable(_, .resourceError) = $0.frame { return true }; return false }
            XCTAssertEqual(sentError, minor >= 1, "minor \(minor)")
            let told = p.eventsA.contains(.resourceError(stream: id, error: .noSpace(needed: 32 << 20, available: 16 << 20)))
            XCTAssertEqual(told, minor >= 1, "minor \(minor)")
            XCTAssertEqual(p.eventsA.last, .streamClosed(stream: id, status: .cancelledByReceiver), "the stream ends either way")
            XCTAssertNil(p.a.credit(of: id))
        }
    }

    func testResourceDataBeforeAcceptIsProtocolViolation() {
        var b = SessionCore(role: .responder)
        b.linkUp(1, now: 0)
        b.receive(.reliable(seq: 1, record: .resourceOffer(stream: 1, size: 10, sha256: [UInt8](repeating: 0, count: 32), name: "r")), on: 1, now: 0)
        _ = b.takeOutputs()
        b.receive(.reliable(seq: 2, record: .streamData(stream: 1, bytes: [1, 2, 3])), on: 1, now: 0)
        XCTAssertEqual(SessionPair.violations(events(&b)).count, 1)
    }

    func testStreamsSurviveLinkChange() throws {
        var c = SessionConfig()
        c.fragmentSize = 256
        let p = SessionPair(a: c, b: c)
        p.up(1)
        let id = try p.a.openStream(name: "s", now: 0)
        p.settle()
        let data = message(4, size: 5000)
        try p.a.write(data, to: id, now: 0)
        p.run(limit: 5)
        p.dropInFlight(on: 1)
        p.down(1)
        p.up(2)
        p.settle()
        XCTAssertEqual(streamBytes(p.eventsB, id), data)
        XCTAssertTrue(SessionPair.violations(p.eventsB).isEmpty)
    }
}
