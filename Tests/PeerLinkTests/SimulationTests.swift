import Foundation
import Synchronization
import XCTest
@testable import PeerLink

/// The virtual-time runtime: what runs when, what a run costs in real time, and how a run
/// that cannot finish ends.
final class SimulationTests: XCTestCase {
    actor Log {
        var lines: [String] = []
        func add(_ s: String) { lines.append(s) }
    }

    func testSleepsEndInVirtualOrderWithoutWaitingForTheClock() throws {
        let started = Date()
        let sim = Simulation(seed: 1)
        let lines = try sim.run {
            let log = Log()
            await withTaskGroup(of: Void.self) { g in
                for (name, seconds) in [("ten", 10.0), ("one", 1.0), ("five", 5.0), ("also-five", 5.0)] {
                    g.addTask {
                        try? await Runtime.sleep(seconds: seconds)
                        await log.add("\(name)@\(Runtime.milliseconds())")
                    }
                }
            }
            return await log.lines
        }
        XCTAssertEqual(lines, ["one@1000", "five@5000", "also-five@5000", "ten@10000"])
        XCTAssertEqual(sim.nanoseconds, 10_000_000_000)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "16 s of sleeps took real time")
    }

    func testTaskSleepOfTheStandardLibraryRunsInVirtualTimeToo() throws {
        let sim = Simulation(seed: 1)
        let at = try sim.run {
            try await Task.sleep(nanoseconds: 2_500_000_000)
            try await Task.sleep(for: .milliseconds(1500))
            return Runtime.milliseconds()
        }
        XCTAssertEqual(at, 4000)
    }

    func testACancelledSleepEndsAtOnce() throws {
        let sim = Simulation(seed: 1)
        let (cancelledAt, threw) = try sim.run {
            let sleeper = Task { () -> (UInt64, Bool) in
                do { try await Runtime.sleep(seconds: 60) } catch { return (Runtime.milliseconds(), true) }
                return (Runtime.milliseconds(), false)
            }
            try await Runtime.sleep(seconds: 2)
            sleeper.cancel()
            return await sleeper.value
        }
        XCTAssertTrue(threw, "the cancelled sleep did not throw")
        XCTAssertEqual(cancelledAt, 2000, "the cancelled sleep ran to its deadline")
    }

    func testSameSeedSameNumbersAndOrder() throws {
        func once(_ seed: UInt64) throws -> [String] {
            try Simulation(seed: seed).run {
                let log = Log()
                await withTaskGroup(of: Void.self) { g in
                    for i in 0..<20 {
                        g.addTask {
                            let r = Runtime.random() % 1000
                            try? await Runtime.sleep(nanoseconds: r * 1_000_000)
                            await log.add("\(i):\(r)")
                        }
                    }
                }
                return await log.lines
            }
        }
        let a = try once(42), b = try once(42), c = try once(43)
        XCTAssertEqual(a, b)
        XCTAssertNotEqual(a, c, "the seed did not change the numbers")
    }

    func testARunThatWaitsForNothingIsReportedStalled() throws {
        let sim = Simulation(seed: 1)
        XCTAssertThrowsError(try sim.run(foreignWait: .milliseconds(200)) {
            try await Runtime.sleep(seconds: 3)
            await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }  // never resumed
        }) { error in
            guard case let Simulation.Failure.stalled(at)? = error as? Simulation.Failure else {
                return XCTFail("expected stalled, got \(error)")
            }
            XCTAssertEqual(at, 3_000_000_000)
        }
    }

    func testARunPastItsLimitEnds() throws {
        XCTAssertThrowsError(try Simulation(seed: 1).run(limit: .seconds(30)) {
            while true { try await Runtime.sleep(seconds: 1) }
        }) { error in
            guard case .overran? = error as? Simulation.Failure else { return XCTFail("expected overran, got \(error)") }
        }
    }

    func testOnlyOneSimulationRunsAtATime() throws {
        let outer = Simulation(seed: 1)
        let inner: String = try outer.run {
            do { return try Simulation(seed: 2).run { "ran" } } catch { return "\(error)" }
        }
        XCTAssertEqual(inner, Simulation.Failure.busy.description)
        XCTAssertNil(Runtime.simulation, "the runtime still points at a simulation after its run")
    }

    func testOffloadedWorkRunsInlineAndDetachedWorkToo() throws {
        let sim = Simulation(seed: 1)
        let result = try sim.run {
            let x = try await Runtime.offload("test") { 21 * 2 }
            let box = Log()
            let done = AsyncStream<Void>.makeStream()
            Runtime.detach("test") { Task { await box.add("detached"); done.continuation.yield() } }
            for await _ in done.stream { break }
            return (x, await box.lines)
        }
        XCTAssertEqual(result.0, 42)
        XCTAssertEqual(result.1, ["detached"])
        XCTAssertEqual(sim.foreignEnqueues, 0, "work ran on another thread")
    }

    func testTasksOutsideTheSimulationKeepTheSystemsClock() throws {
        // A task of the same process on another thread, sleeping while a simulation runs.
        let outside = Task.detached { () -> (Double, Bool) in
            let t0 = Date()
            try? await Runtime.sleep(nanoseconds: 300_000_000)
            return (Date().timeIntervalSince(t0), Runtime.simulation == nil)
        }
        let sim = Simulation(seed: 1)
        try sim.run {
            for _ in 0..<100 { try await Runtime.sleep(seconds: 1) }
        }
        XCTAssertEqual(sim.nanoseconds, 100_000_000_000)
        let done = try Simulation.waitOutside(outside)
        XCTAssertGreaterThanOrEqual(done.0, 0.25, "the outside task's sleep ran on the simulation's clock")
        XCTAssertTrue(done.1, "the outside task saw the simulation")
    }
}

extension Simulation {
    /// Waits (real time, at most 10 s) for a task that runs outside any simulation.
    static func waitOutside<T: Sendable>(_ task: Task<T, Never>) throws -> T {
        let box = Mutex<T?>(nil)
        Task.detached { let v = await task.value; box.withLock { $0 = v } }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let v = box.withLock({ $0 }) { return v }
            Thread.sleep(forTimeInterval: 0.01)
        }
        XCTFail("the outside task did not finish within 10 s")
        throw CancellationError()
    }
}
