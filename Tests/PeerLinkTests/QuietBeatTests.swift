import Foundation
import TestKit
import XCTest
@testable import PeerLink

/// The shared beat of quiet channels: every waiter wakes at a beat, a cancelled waiter at
/// once (even when cancelled before it was stored), and the timer stops when nobody waits.
final class QuietBeatTests: XCTestCase {
    func testEveryWaiterWakesAndACancelledOneReturnsAtOnce() async throws {
        let beat = QuietBeat(periodMillis: 20)
        let woke = Counter()
        let waiters = (0..<200).map { _ in Task { await beat.wait(); woke.increment() } }
        try await within(10, "200 waiters woken by a 20 ms beat", progress: { "\(woke.value) woke" }) {
            for w in waiters { await w.value }
        }
        XCTAssertEqual(woke.value, 200)
        XCTAssertEqual(beat.waiting, 0)

        // A long beat: a cancelled waiter must not wait for it. The bounds below are a small
        // fraction of the beat, so only cancellation can end these waits in time.
        let slow = QuietBeat(periodMillis: 60_000)
        let napping = Task { await slow.wait() }
        let stored = await waitUntil(timeout: 10) { slow.waiting == 1 }
        XCTAssertTrue(stored)
        napping.cancel()
        try await within(3, "cancel ending a wait for a 60 s beat") { await napping.value }
        XCTAssertEqual(slow.waiting, 0)
        // Cancelled before it even started waiting: returns at once too.
        let early = Task { await slow.wait() }
        early.cancel()
        try await within(3, "a wait cancelled before it started to return") { await early.value }
        XCTAssertEqual(slow.waiting, 0)
    }
}
