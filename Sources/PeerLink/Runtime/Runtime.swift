import Dispatch
import Foundation
import Synchronization

/// Where PeerLink reads the time, waits, draws random numbers and runs blocking work: the
/// system's, or a `Simulation`'s while one runs in this process (the harness's memory
/// backend, deterministic tests). Every read of the time in the edges and every timed wait
/// goes through here, so that the same code runs in real and in virtual time.
package enum Runtime {
    private static let active = Atomic<Bool>(false)
    private static let current = Mutex<Simulation?>(nil)

    /// The simulation the caller runs in, if any: one runs, and this is its thread. Tasks of
    /// the same process that run outside it (on other threads) keep the system's time.
    package static var simulation: Simulation? {
        guard active.load(ordering: .acquiring), let sim = current.withLock({ $0 }), sim.isSimulationThread else { return nil }
        return sim
    }

    static func install(_ sim: Simulation) -> Bool {
        current.withLock { c in
            guard c == nil else { return false }
            c = sim
            active.store(true, ordering: .releasing)
            return true
        }
    }

    static func uninstall(_ sim: Simulation) {
        current.withLock { c in
            guard c === sim else { return }
            c = nil
            active.store(false, ordering: .releasing)
        }
    }

    /// Monotonic nanoseconds (virtual ones in a simulation).
    package static func nanoseconds() -> UInt64 {
        if let sim = simulation { return sim.nanoseconds }
        return DispatchTime.now().uptimeNanoseconds
    }

    /// Monotonic milliseconds: the time the sans-I/O core is fed with.
    package static func milliseconds() -> UInt64 { nanoseconds() / 1_000_000 }

    /// Seconds on the monotonic clock, for measuring spans.
    package static func seconds() -> Double { Double(nanoseconds()) / 1e9 }

    /// Waits `nanoseconds`; throws `CancellationError` when the task is cancelled first.
    package static func sleep(nanoseconds: UInt64) async throws {
        if let sim = simulation { return try await sim.sleep(nanoseconds: nanoseconds) }
        try await Task.sleep(nanoseconds: nanoseconds)
    }

    /// Waits `duration` (negative counts as zero); throws `CancellationError` when cancelled.
    package static func sleep(for duration: Duration) async throws {
        try await sleep(seconds: duration.inSeconds)
    }

    /// Waits `seconds` (negative counts as zero); throws `CancellationError` when cancelled.
    package static func sleep(seconds: Double) async throws {
        try await sleep(nanoseconds: UInt64(max(0, seconds) * 1e9))
    }

    /// A random 64-bit number: the simulation's seeded sequence while one runs.
    package static func random() -> UInt64 {
        if let sim = simulation { return sim.random() }
        var g = SystemRandomNumberGenerator()
        return g.next()
    }

    /// `count` random bytes (see `random()`).
    package static func randomBytes(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count + 8)
        while out.count < count {
            var r = random()
            for _ in 0..<8 { out.append(UInt8(truncatingIfNeeded: r)); r >>= 8 }
        }
        return Array(out.prefix(count))
    }

    /// Runs blocking work (a connect with a deadline, hashing a file) where blocking is
    /// allowed — a thread of its own — and returns its result; inline in a simulation, where
    /// its real duration does not count.
    package static func offload<T: Sendable, E: Error>(_ name: String, _ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        if simulation != nil { return try body() }
        return try await BlockingCall.run(name, body)
    }

    /// Runs `body` behind `lane`'s earlier jobs (small steps kept in order) and returns its
    /// result; inline in a simulation.
    package static func offload<T: Sendable>(on lane: BlockingPool.Lane, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        if simulation != nil { return try body() }
        return try await lane.run(body)
    }

    /// Runs `body` on a thread of its own without waiting for it; inline in a simulation.
    package static func detach(_ name: String, _ body: @escaping @Sendable () -> Void) {
        if simulation != nil { return body() }
        BlockingCall.detach(name, body)
    }

    /// Seconds since 1970 (a simulation's start counts as 2026-01-01): for times shown to
    /// users, never for measuring spans.
    package static func wallClock() -> Double {
        if let sim = simulation { return 1_767_225_600 + Double(sim.nanoseconds) / 1e9 }
        return Date().timeIntervalSince1970
    }

    /// Runs `body` behind `lane`'s earlier jobs without waiting; inline in a simulation.
    package static func post(on lane: BlockingPool.Lane, _ body: @escaping @Sendable () -> Void) {
        if simulation != nil { return body() }
        lane.post(body)
    }
}
