import XCTest
@testable import PeerLink

/// `EventBroadcast`: several readers each read every event, in order; nothing is dropped for
/// want of a reader; the slowest reader is what `unread` reports.
final class EventBroadcastTests: XCTestCase {
    func testTwoReadersEachGetEveryEventInOrder() async {
        let b = EventBroadcast<Int>()
        let r1 = b.subscribe(), r2 = b.subscribe()
        let first = Task { var got: [Int] = []; for _ in 0..<100 { got.append(await b.next(r1) ?? -1) }; return got }
        let second = Task { var got: [Int] = []; for _ in 0..<100 { got.append(await b.next(r2) ?? -1) }; return got }
        for i in 0..<100 { b.push(i); if i % 7 == 0 { await Task.yield() } }
        let a = await first.value, c = await second.value
        XCTAssertEqual(a, Array(0..<100))
        XCTAssertEqual(c, Array(0..<100))
        XCTAssertEqual(b.unread, 0)
    }

    func testEventsWithoutAReaderWaitForTheFirstOne() async {
        let b = EventBroadcast<Int>()
        for i in 0..<5 { b.push(i) }
        XCTAssertEqual(b.unread, 5, "kept for a reader")
        let r = b.subscribe()
        var got: [Int] = []
        for _ in 0..<5 { got.append(await b.next(r) ?? -1) }
        XCTAssertEqual(got, [0, 1, 2, 3, 4])
        XCTAssertEqual(b.unread, 0)
    }

    func testAReaderJoiningLaterStartsAtTheNextEvent() async {
        let b = EventBroadcast<String>()
        let early = b.subscribe()
        b.push("before")
        let late = b.subscribe()
        b.push("after")
        let e1 = await b.next(early), e2 = await b.next(early)
        XCTAssertEqual([e1, e2], ["before", "after"])
        let l1 = await b.next(late)
        XCTAssertEqual(l1, "after")
    }

    func testUnreadFollowsTheSlowestReaderAndADroppedReaderLetsGo() async {
        let b = EventBroadcast<Int>()
        let fast = b.subscribe(), slow = b.subscribe()
        for i in 0..<10 { b.push(i) }
        for _ in 0..<10 { _ = await b.next(fast) }
        XCTAssertEqual(b.unread, 10, "the slow reader has read nothing")
        _ = await b.next(slow)
        XCTAssertEqual(b.unread, 9)
        b.unsubscribe(slow)
        XCTAssertEqual(b.unread, 0, "only the fast reader is left, and it is up to date")
        XCTAssertEqual(b.readerCount, 1)
    }

    func testACancelledWaitReturnsNilAndTakesNothing() async {
        let b = EventBroadcast<Int>()
        let r = b.subscribe()
        let waiting = Task { await b.next(r) }
        try? await Task.sleep(nanoseconds: 20_000_000)
        waiting.cancel()
        let cancelled = await waiting.value
        XCTAssertNil(cancelled)
        b.push(42)
        let next = await b.next(r)
        XCTAssertEqual(next, 42, "the cancelled wait took nothing")
    }

    func testWithALimitOnlyTheNewestWaitForAReader() async {
        let b = EventBroadcast<Int>(keepWithoutReader: 2)
        for i in 0..<5 { b.push(i) }
        XCTAssertEqual(b.unread, 2)
        let r = b.subscribe()
        b.push(5)
        var got: [Int] = []
        for _ in 0..<3 { got.append(await b.next(r) ?? -1) }
        XCTAssertEqual(got, [3, 4, 5])
        let none = EventBroadcast<Int>(keepWithoutReader: 0)
        none.push(1)
        XCTAssertEqual(none.unread, 0, "kept an event with a limit of 0")
    }

    func testAfterFinishReadersTakeWhatIsLeftThenEnd() async {
        let b = EventBroadcast<Int>()
        let r = b.subscribe()
        let waiting = b.subscribe()
        let waiter = Task { await b.next(waiting) }
        _ = await waitUntil(timeout: 10) { b.readerCount == 2 }
        b.push(1)
        b.finish()
        b.push(2)  // after the end: dropped
        let first = await b.next(r), second = await b.next(r)
        XCTAssertEqual(first, 1)
        XCTAssertNil(second, "a reader went on past the end")
        let woken = await waiter.value
        XCTAssertEqual(woken, 1)
        let late = b.subscribe(fromEnd: true)
        let lateNext = await b.next(late)
        XCTAssertNil(lateNext, "a reader that joined after the end got something")
    }

    /// Through the public API: two loops over a browser's events each see every peer, the
    /// later one starting from the peers already found, and both end when the browser stops.
    func testTwoLoopsOverABrowsersEventsEachSeeEveryPeerAndEndWithTheBrowser() async throws {
        let discovery = MemoryDiscovery(), net = MemoryNetwork(), service = try ServiceType("broadcast")
        func node(_ name: String) throws -> Node {
            let identity = Identity()
            return try Node(identity: identity, displayName: name,
                            transports: [MemoryTransport(network: net, address: identity.peerID.description, emulating: .tcp)])
        }
        let me = try node("me"), a = try node("a"), b = try node("b")
        let browser = Browser(node: me, service: service, discovery: discovery)
        try await browser.start()
        actor Seen {
            var names: [Int: [String]] = [:]
            func add(_ loop: Int, _ e: DiscoveryEvent) {
                if case let .found(p) = e { names[loop, default: []].append(p.displayName) }
            }
            func count(_ loop: Int) -> Int { names[loop]?.count ?? 0 }
        }
        let seen = Seen()
        let first = Task { for await e in browser.events { await seen.add(1, e) }; return !Task.isCancelled }
        let advA = Advertiser(node: a, service: service, discovery: discovery)
        try await advA.start()
        let firstSawA = await waitUntil(timeout: 10) { await seen.count(1) == 1 }
        XCTAssertTrue(firstSawA, "the first loop did not see a")
        let second = Task { for await e in browser.events { await seen.add(2, e) }; return !Task.isCancelled }
        let secondSawA = await waitUntil(timeout: 10) { await seen.count(2) == 1 }
        XCTAssertTrue(secondSawA, "the loop started later was not told of the peer found before it")
        let advB = Advertiser(node: b, service: service, discovery: discovery)
        try await advB.start()
        let bothSawB = await waitUntil(timeout: 10) { let one = await seen.count(1), two = await seen.count(2); return one == 2 && two == 2 }
        XCTAssertTrue(bothSawB, "both loops see the peer found while they run")
        browser.stop()
        let watchdog = Task { try? await Task.sleep(nanoseconds: 10_000_000_000); first.cancel(); second.cancel() }
        let ended = [await first.value, await second.value]
        watchdog.cancel()
        XCTAssertEqual(ended, [true, true], "a loop did not end when the browser stopped (cancelled after 10 s)")
        let names = await seen.names
        XCTAssertEqual(names[1], ["a", "b"])
        XCTAssertEqual(names[2], ["a", "b"])
        var after = browser.events.makeAsyncIterator()
        let afterStop = await after.next()
        XCTAssertNil(afterStop, "an iteration started after stop() got an event")
        await advA.stop(); await advB.stop()
    }

    /// Through the public API: two loops over one session's events both see a message.
    func testTwoLoopsOverASessionsEventsBothSeeTheMessage() async throws {
        let net = MemoryNetwork()
        let a = try Node(identity: Identity(), displayName: "a", transports: [MemoryTransport(network: net, address: "a", emulating: .tcp)])
        let b = try Node(identity: Identity(), displayName: "b", transports: [MemoryTransport(network: net, address: "b", emulating: .tcp)])
        let sa = Session(node: a), sb = Session(node: b)
        let adv = Advertiser(node: a, service: try ServiceType("broadcast"))
        try await adv.start()
        Task { for await i in adv.invitations { i.accept(into: sa) } }
        func firstMessage() -> Task<[UInt8]?, Never> {
            Task { for await e in sa.events { if case let .message(_, bytes, _) = e { return bytes } }; return nil }
        }
        let ui = firstMessage(), logger = firstMessage()
        try await b.invite(PeerInfo(peerID: a.peerID, displayName: "a", info: [:],
                                    endpoints: [TransportEndpoint(medium: .tcp, host: "a", port: 0)]), to: sb, timeout: .seconds(10))
        let readers = await waitUntil(timeout: 10) { sa.queue.readerCount == 2 }
        XCTAssertTrue(readers, "both loops are reading")
        try await sb.send(Array("hi".utf8), to: [a.peerID])
        // Bounded: a loop that sees nothing is cancelled after 10 s and reports nil.
        let watchdog = Task { try? await Task.sleep(nanoseconds: 10_000_000_000); ui.cancel(); logger.cancel() }
        let seen = [await ui.value, await logger.value]
        watchdog.cancel()
        XCTAssertEqual(seen, [Array("hi".utf8), Array("hi".utf8)])
        await sb.disconnect(); await sa.disconnect(); await adv.stop()
    }
}
