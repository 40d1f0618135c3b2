import XCTest
@testable import PeerLinkCore

/// When each of a peer's paths is dialled, without a socket or a clock.
final class PathUpkeepTests: XCTestCase {
    func testEveryPathWithoutALinkIsDialledOnceInOrder() {
        var u = PathUpkeep()
        u.setPaths(["bluetooth/AA", "tcp/10.0.0.2", "tcp/10.0.1.2"])
        u.linked("bluetooth/AA", 1)
        XCTAssertEqual(u.due(now: 0), ["tcp/10.0.0.2", "tcp/10.0.1.2"])
        XCTAssertEqual(u.due(now: 0), [], "paths being dialled are not dialled twice")
        XCTAssertNil(u.nextDeadline(now: 0), "nothing waits for time while both dial")
        u.linked("tcp/10.0.0.2", 2)
        XCTAssertEqual(u.linkedPaths, ["bluetooth/AA", "tcp/10.0.0.2"])
    }

    func testFailedPathsBackOffExponentiallyUpToThirtySeconds() {
        var u = PathUpkeep()
        u.setPaths(["tcp/x"])
        var now: UInt64 = 0
        var waits: [UInt64] = []
        for _ in 0..<8 {
            XCTAssertEqual(u.due(now: now), ["tcp/x"])
            let w = u.dialFailed("tcp/x", now: now)
            waits.append(w)
            XCTAssertEqual(u.nextDeadline(now: now), now + w)
            XCTAssertEqual(u.due(now: now + w - 1), [], "retried before its backoff")
            now += w
        }
        XCTAssertEqual(waits, [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000])
        XCTAssertEqual(u.due(now: now), ["tcp/x"])
        u.linked("tcp/x", 5)
        u.linkDown(5)
        XCTAssertEqual(u.due(now: now), ["tcp/x"], "a success resets the backoff: a lost link is dialled again at once")
    }

    func testALostLinkIsDueAtOnceAndTheInvitedSideHoldsOff() {
        var u = PathUpkeep()
        u.setPaths(["tcp/a", "tcp/b"])
        u.linked("tcp/a", 1)
        u.holdOff(until: 3000)
        XCTAssertEqual(u.due(now: 0), [])
        XCTAssertEqual(u.nextDeadline(now: 0), 3000)
        XCTAssertEqual(u.due(now: 3000), ["tcp/b"])
        u.live([])  // link 1 is gone
        XCTAssertEqual(u.due(now: 3001), ["tcp/a"])
        u.dialAbandoned("tcp/a")
        XCTAssertEqual(u.nextDeadline(now: 3002), 3002, "an abandoned dial leaves its path due")
    }
}
