import Foundation
import Synchronization
import XCTest
@testable import PeerLink

/// The blocking pool: bounded threads whatever the load, results back to the caller, lanes
/// that keep order and never overlap, idle threads that end.
final class BlockingPoolTests: XCTestCase {
    func testManyBlockingJobsShareAFewThreads() async throws {
        let pool = BlockingPool(maxThreads: 3, name: "test.pool", idleTimeout: 5)
        let busiest = Shared((now: 0, most: 0))
        let results = try await withThrowingTaskGroup(of: Int.self) { g in
            for i in 0..<60 {
                g.addTask {
                    try await pool.run("job") { () throws -> Int in
                        busiest.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                        usleep(2_000)
                        busiest.withLock { $0.now -= 1 }
                        if i == 7 { throw CocoaError(.fileNoSuchFile) }
                        return i
                    }
                }
            }
            var out: [Int] = []
            while let r = await g.nextResult() { if case let .success(v) = r { out.append(v) } }
            return out.sorted()
        }
        XCTAssertEqual(results, (0..<60).filter { $0 != 7 }, "a result was lost, or the failing job's error did not come back")
        XCTAssertLessThanOrEqual(pool.threadCount, 3)
        XCTAssertLessThanOrEqual(busiest.withLock { $0.most }, 3, "more jobs ran at once than the pool has threads")
    }

    func testALaneRunsItsJobsInOrderOneAtATime() async throws {
        let pool = BlockingPool(maxThreads: 4, name: "test.lane", idleTimeout: 5)
        let lanes = (0..<3).map { BlockingPool.Lane("lane\($0)", pool: pool) }
        let log = Shared<[Int: [Int]]>([:])
        let overlap = Shared((running: Set<Int>(), seen: false))
        let done = AsyncStream<Void>.makeStream()
        let total = 3 * 200
        let count = Shared(0)
        for i in 0..<200 {
            for (l, lane) in lanes.enumerated() {
                lane.post {
                    overlap.withLock { o in if !o.running.insert(l).inserted { o.seen = true } }
                    log.withLock { $0[l, default: []].append(i) }
                    overlap.withLock { _ = $0.running.remove(l) }
                    if count.withLock({ $0 += 1; return $0 }) == total { done.continuation.yield() }
                }
            }
        }
        let finished = await waitFor(done.stream, seconds: 10)
        XCTAssertTrue(finished, "the lanes' jobs did not all run within 10 s")
        for l in 0..<3 { XCTAssertEqual(log.withLock { $0[l] }, Array(0..<200), "lane \(l) ran out of order") }
        XCTAssertFalse(overlap.withLock { $0.seen }, "two jobs of one lane ran at once")
        let last = try await lanes[0].run { 42 }
        XCTAssertEqual(last, 42)
    }

    func testJobsThatBlockTogetherAllStartWhileThreadsAreIdle() async throws {
        let pool = BlockingPool(maxThreads: 4, name: "test.idle", idleTimeout: 5)
        // Two threads exist and are idle.
        async let w1: Void = pool.run("warm") { usleep(20_000) }
        async let w2: Void = pool.run("warm") { usleep(20_000) }
        _ = await (w1, w2)
        // Four jobs that each wait until all four have started: each needs a thread of its own.
        let started = Shared(0)
        let all = try await withThrowingTaskGroup(of: Bool.self) { g in
            for _ in 0..<4 {
                g.addTask {
                    try await pool.run("together") { () -> Bool in
                        started.withLock { $0 += 1 }
                        let deadline = Date().addingTimeInterval(5)
                        while started.withLock({ $0 }) < 4, Date() < deadline { usleep(1000) }
                        return started.withLock { $0 } == 4
                    }
                }
            }
            var ok = true
            for try await r in g { ok = ok && r }
            return ok
        }
        XCTAssertTrue(all, "the four blocking jobs did not all run at once: idle threads were counted twice")
    }

    func testIdleThreadsEnd() async throws {
        let pool = BlockingPool(maxThreads: 2, name: "test.idle", idleTimeout: 0.2)
        _ = try await pool.run("one") { 1 }
        XCTAssertEqual(pool.threadCount, 1)
        let deadline = Date().addingTimeInterval(5)
        while pool.threadCount > 0, Date() < deadline { try await Task.sleep(nanoseconds: 50_000_000) }
        XCTAssertEqual(pool.threadCount, 0, "an idle thread did not end")
        _ = try await pool.run("again") { 2 }
    }

    private func waitFor(_ s: AsyncStream<Void>, seconds: Double) async -> Bool {
        await withTaskGroup(of: Bool.self) { g in
            g.addTask { for await _ in s { return true }; return false }
            g.addTask { try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9)); return false }
            let first = await g.next() ?? false
            g.cancelAll()
            return first
        }
    }
}

/// A value several threads change under a lock (the tests' own bookkeeping).
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ v: Value) { mutex = Mutex(v) }
    func withLock<R: Sendable>(_ body: (inout sending Value) -> sending R) -> R { mutex.withLock(body) }
}
