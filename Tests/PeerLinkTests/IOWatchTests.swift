import Foundation
import Synchronization
import TestKit
import XCTest
@testable import PeerLink
#if canImport(Glibc)
import Glibc
#endif

/// Long-lived descriptor watches and timers on the I/O loop: readiness reaches the handler
/// while the watch stands and never after `cancel` returns, `cancel` waits for a running
/// handler (unless called from it), two watches may share a descriptor, and timers fire once,
/// or not at all when re-armed or cancelled. Every wait is bounded; nothing is timed.
final class IOWatchTests: XCTestCase {
    private func pair(_ type: Int32 = Int32(SOCK_SEQPACKET.rawValue)) throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw XCTSkip("socketpair: errno \(errno)") }
        return (fds[0], fds[1])
    }

    private func send(_ fd: Int32, _ byte: UInt8) {
        var b = byte
        XCTAssertEqual(write(fd, &b, 1), 1)
    }

    /// Reads one byte if there is one (non-blocking).
    private static func take(_ fd: Int32) -> UInt8? {
        var b: UInt8 = 0
        return recv(fd, &b, 1, Int32(MSG_DONTWAIT)) == 1 ? b : nil
    }

    /// Returns once the loop has run two more full turns: a descriptor that was still in its
    /// set and ready would have been reported by then.
    private func twoLoopTurns() throws {
        for round in 0..<2 {
            let (a, b) = try pair()
            defer { close(a); close(b) }
            let seen = DispatchSemaphore(value: 0)
            let w = try IOWatch(fd: a, events: .readable) { _ in seen.signal() }
            send(b, 1)
            XCTAssertEqual(seen.wait(timeout: .now() + 10), .success, "barrier \(round)")
            w.cancel()
        }
    }

    func testReadinessReachesTheHandlerUntilCancelled() throws {
        let (a, b) = try pair()
        defer { close(a); close(b) }
        let got = Mutex<[UInt8]>([])
        let afterCancel = Atomic<Bool>(false)
        let lateCalls = Atomic<Int>(0)
        let arrived = DispatchSemaphore(value: 0)
        let w = try IOWatch(fd: a, events: .readable) { events in
            if afterCancel.load(ordering: .sequentiallyConsistent) { lateCalls.add(1, ordering: .relaxed) }
            XCTAssertTrue(events.contains(.readable))
            while let byte = Self.take(a) {
                got.withLock { $0.append(byte) }
                arrived.signal()
            }
        }
        for i in 1...3 {
            send(b, UInt8(i))
            XCTAssertEqual(arrived.wait(timeout: .now() + 10), .success, "byte \(i)")
        }
        XCTAssertEqual(got.withLock { $0 }, [1, 2, 3])
        w.cancel()
        afterCancel.store(true, ordering: .sequentiallyConsistent)
        send(b, 4)  // readable again, but nobody watches
        try twoLoopTurns()
        XCTAssertEqual(lateCalls.load(ordering: .relaxed), 0, "the handler ran after cancel returned")
        XCTAssertEqual(Self.take(a), 4, "the byte is still there for whoever reads next")
    }

    func testCancelWaitsForTheRunningHandler() throws {
        let (a, b) = try pair()
        defer { close(a); close(b) }
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let cancelReturned = Atomic<Bool>(false)
        let sawCancelReturned = Atomic<Bool>(false)
        let w = try IOWatch(fd: a, events: .readable) { _ in
            _ = Self.take(a)
            entered.signal()
            _ = release.wait(timeout: .now() + 10)
            sawCancelReturned.store(cancelReturned.load(ordering: .sequentiallyConsistent), ordering: .sequentiallyConsistent)
        }
        send(b, 1)
        XCTAssertEqual(entered.wait(timeout: .now() + 10), .success)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            w.cancel()
            cancelReturned.store(true, ordering: .sequentiallyConsistent)
            done.signal()
        }
        usleep(50_000)  // gives a cancel that does not wait the chance to return early
        release.signal()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "cancel returned")
        XCTAssertFalse(sawCancelReturned.load(ordering: .sequentiallyConsistent), "cancel returned while the handler ran")
    }

    func testCancelFromItsOwnHandlerReturns() throws {
        let (a, b) = try pair()
        defer { close(a); close(b) }
        let box = Mutex<IOWatch?>(nil)
        let cancelled = DispatchSemaphore(value: 0)
        let w = try IOWatch(fd: a, events: .readable) { _ in
            box.withLock { $0 }?.cancel()
            cancelled.signal()
        }
        box.withLock { $0 = w }
        send(b, 1)
        XCTAssertEqual(cancelled.wait(timeout: .now() + 10), .success, "the handler's cancel returned")
    }

    /// libdbus and Avahi watch one socket twice, once for reading and once for writing.
    func testTwoWatchesShareOneDescriptor() throws {
        let (a, b) = try pair()
        defer { close(a); close(b) }
        let readable = DispatchSemaphore(value: 0)
        let writable = DispatchSemaphore(value: 0)
        let r = try IOWatch(fd: a, events: .readable) { _ in
            _ = Self.take(a)
            readable.signal()
        }
        let wr = try IOWatch(fd: a, events: .writable) { [writable] _ in writable.signal() }
        XCTAssertEqual(writable.wait(timeout: .now() + 10), .success, "the write watch")
        wr.update([])  // empty: out of the set, so an always-writable socket stops calling
        send(b, 1)
        XCTAssertEqual(readable.wait(timeout: .now() + 10), .success, "the read watch")
        XCTAssertEqual(r.interest, .readable)
        r.cancel()
        wr.cancel()
    }

    /// An empty interest hears nothing, not even a hang-up; asking again hears it.
    func testEmptyInterestHearsNothingUntilUpdated() throws {
        let (a, b) = try pair()
        defer { close(a) }
        let calls = Atomic<Int>(0)
        let heard = DispatchSemaphore(value: 0)
        let w = try IOWatch(fd: a, events: []) { _ in
            calls.add(1, ordering: .relaxed)
            heard.signal()
        }
        close(b)  // a is now readable (end of stream) and hung up
        try twoLoopTurns()
        XCTAssertEqual(calls.load(ordering: .relaxed), 0)
        XCTAssertEqual(w.update(.readable), 0)
        XCTAssertEqual(heard.wait(timeout: .now() + 10), .success)
        w.cancel()
    }

    func testTimerFiresOnceAndNotWhenCancelledOrRearmed() async throws {
        let fired = Mutex<[String]>([])
        let once = IOTimer { fired.withLock { $0.append("once") } }
        let cancelled = IOTimer { fired.withLock { $0.append("cancelled") } }
        let rearmed = IOTimer { fired.withLock { $0.append("rearmed") } }
        cancelled.schedule(afterNanoseconds: 20_000_000)
        rearmed.schedule(afterNanoseconds: 20_000_000)
        once.schedule(afterNanoseconds: 0)
        cancelled.cancel()
        rearmed.schedule(afterNanoseconds: 60_000_000_000)  // a minute: later than this test
        XCTAssertFalse(cancelled.isArmed)
        XCTAssertTrue(rearmed.isArmed)
        let barrier = DispatchSemaphore(value: 0)
        let last = IOTimer { barrier.signal() }
        last.schedule(afterNanoseconds: 200_000_000)  // after the first arming of the others
        let reached = await withCheckedContinuation { c in
            Thread.detachNewThread { c.resume(returning: barrier.wait(timeout: .now() + 10)) }
        }
        XCTAssertEqual(reached, .success)
        XCTAssertEqual(fired.withLock { $0 }, ["once"])
        XCTAssertFalse(once.isArmed)
        rearmed.cancel()
    }
}
