import Foundation
import XCTest
@testable import PeerLink

/// The process's shared timer for peer channels: deadlines met, waiters with slack woken
/// together, cancellation ends a wait at once.
final class DeadlineWheelTests: XCTestCase {
    func testWaitersAreWokenAtTheirDeadlineAndThoseWithSlackTogether() async throws {
        let wheel = DeadlineWheel()
        let start = Runtime.milliseconds()
        // Three lazy waiters within 100 ms of each other, allowed 150 ms of slack: one wake-up.
        async let a = woken(wheel, at: start + 200, latest: start + 350)
        async let b = woken(wheel, at: start + 250, latest: start + 400)
        async let c = woken(wheel, at: start + 300, latest: start + 450)
        // An urgent one later, woken on time.
        async let d = woken(wheel, at: start + 600, latest: start + 600)
        let (ta, tb, tc, td) = await (a, b, c, d)
        XCTAssertGreaterThanOrEqual(ta, start + 200, "woken before its deadline")
        XCTAssertGreaterThanOrEqual(tb, start + 250)
        XCTAssertGreaterThanOrEqual(tc, start + 300)
        XCTAssertEqual(Double(ta), Double(tc), accuracy: 30, "waiters within each other's slack were not woken together")
        XCTAssertLessThan(tc, start + 450 + 2000, "woken long after its latest time")
        XCTAssertGreaterThanOrEqual(td, start + 600)
        XCTAssertEqual(wheel.count, 0)
    }

    func testACancelledWaitEndsAtOnce() async throws {
        let wheel = DeadlineWheel()
        let t0 = Date()
        let waiter = Task { await wheel.wait(until: Runtime.milliseconds() + 60_000, latest: Runtime.milliseconds() + 60_000) }
        try await Task.sleep(nanoseconds: 50_000_000)
        waiter.cancel()
        let fired = await waiter.value
        XCTAssertFalse(fired, "a cancelled wait reported its deadline")
        XCTAssertLessThan(Date().timeIntervalSince(t0), 5, "the cancelled wait did not end at once")
        XCTAssertEqual(wheel.count, 0, "the cancelled waiter stayed on the wheel")
    }

}

/// The time a wait on `wheel` ended (ms); fails the test when the wait was cancelled.
private func woken(_ wheel: DeadlineWheel, at: UInt64, latest: UInt64) async -> UInt64 {
    let fired = await wheel.wait(until: at, latest: latest)
    XCTAssertTrue(fired)
    return Runtime.milliseconds()
}
