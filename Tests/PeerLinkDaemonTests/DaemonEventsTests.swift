import XCTest
@testable import PeerLinkDaemon

/// The daemon's event ring: consecutive IDs, resuming after an ID, "gone" for dropped ones,
/// readers woken by the next event or their timeout.
final class DaemonEventsTests: XCTestCase {
    func ids(_ r: Result<[DaemonEvent], DaemonEvents.Gone>) -> [UInt64]? {
        if case let .success(l) = r { return l.map(\.id) }
        return nil
    }

    func testResumingGivesEveryLaterEventOnce() {
        let e = DaemonEvents(capacity: 4, firstID: 10)
        XCTAssertEqual(ids(e.after(9)), [])
        for _ in 0..<3 { e.publish(.itemQueued, item: "x") }
        XCTAssertEqual(ids(e.after(9)), [10, 11, 12])
        XCTAssertEqual(ids(e.after(11)), [12])
        XCTAssertEqual(ids(e.after(12)), [])
        XCTAssertEqual(ids(e.after(500)), [], "an ID from the future waits for it")
        XCTAssertEqual(e.after(8), .failure(.init(oldest: 10)), "an ID from before the first is gone (an earlier run)")
    }

    func testTheRingDropsTheOldestAndSaysSo() {
        let e = DaemonEvents(capacity: 4, firstID: 1)
        for _ in 0..<10 { e.publish(.peerConnected) }
        XCTAssertEqual(e.oldestID, 7)
        XCTAssertEqual(e.nextID, 11)
        XCTAssertEqual(ids(e.after(6)), [7, 8, 9, 10])
        XCTAssertEqual(ids(e.after(8)), [9, 10])
        XCTAssertEqual(e.after(5), .failure(.init(oldest: 7)))
    }

    func testTheFirstIDOfARunIsItsStartTime() {
        let e = DaemonEvents(clock: { 1_700_000_000_000 })
        XCTAssertEqual(e.nextID, 1_700_000_000_000_000)
        XCTAssertEqual(e.publish(.peerLeft).time, 1_700_000_000_000)
    }

    func testAWaitingReaderIsWokenByTheNextEvent() async {
        let e = DaemonEvents(capacity: 8, firstID: 1)
        let reader = Task { await e.wait(after: 0, timeout: .seconds(30)) }
        while e.waiting == 0 { try? await Task.sleep(for: .milliseconds(5)) }
        e.publish(.itemDelivered, item: "a")
        let got = await reader.value
        XCTAssertEqual(ids(got), [1])
        XCTAssertEqual(e.waiting, 0)
    }

    func testAWaitEndsEmptyAtItsTimeoutOrWhenCancelled() async {
        let e = DaemonEvents(capacity: 8, firstID: 1)
        let start = ContinuousClock.now
        let timedOut = await e.wait(after: 0, timeout: .milliseconds(50))
        XCTAssertEqual(ids(timedOut), [])
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .milliseconds(50))
        let reader = Task { await e.wait(after: 0, timeout: .seconds(30)) }
        while e.waiting == 0 { try? await Task.sleep(for: .milliseconds(5)) }
        reader.cancel()
        let cancelled = await reader.value
        XCTAssertEqual(ids(cancelled), [])
        XCTAssertEqual(e.waiting, 0)
    }

    func testManyPublishersAndReadersLoseNothing() async {
        let e = DaemonEvents(capacity: 10_000, firstID: 1)
        let readers = (0..<4).map { _ in
            Task { () -> [UInt64] in
                var seen: [UInt64] = [], last: UInt64 = 0
                while seen.count < 400 {
                    guard case let .success(l) = await e.wait(after: last, timeout: .seconds(10)) else { return seen }
                    seen += l.map(\.id)
                    last = l.last?.id ?? last
                }
                return seen
            }
        }
        await withTaskGroup(of: Void.self) { g in
            for _ in 0..<4 { g.addTask { for _ in 0..<100 { e.publish(.itemQueued); await Task.yield() } } }
        }
        for r in readers { let seen = await r.value; XCTAssertEqual(seen, Array(1...400)) }
    }
}
