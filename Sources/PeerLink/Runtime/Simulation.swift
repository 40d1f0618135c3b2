@_spi(ExperimentalScheduling) import _Concurrency
import Foundation
import Synchronization

/// Runs async code in virtual time on one thread, so that a run of real PeerLink nodes (over
/// the in-memory medium) happens the same way every time and does not wait for the clock.
///
/// While `run` runs, every job the calling thread gives Swift's global executor (every task
/// and actor the run starts) comes here instead, through the concurrency runtime's enqueue
/// hooks, and runs on that thread, first in, first out. Timers wait in a heap by virtual
/// deadline; when no job is ready, the clock jumps to the next deadline. PeerLink's reads of
/// the time and its sleeps go through `Runtime`, which asks the simulation when the caller is
/// its thread. Work that would block a thread (`Runtime.offload`) runs inline. Tasks of the
/// same process on other threads are left alone: they keep the system's executor and clock.
/// When the run ends, what is still waiting goes back to the system's executor.
///
/// What breaks determinism: a thread of its own that resumes one of the run's tasks (none on
/// the in-memory paths; counted in `foreignEnqueues`), and code that reads the wall or
/// monotonic clock directly. Dictionary order is deterministic only with
/// `SWIFT_DETERMINISTIC_HASHING=1` in the environment (the harness re-executes itself with it).
package final class Simulation: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
    private struct Timer: Comparable {
        let deadline: UInt64
        let order: UInt64
        let fire: Fire
        static func < (a: Timer, b: Timer) -> Bool { (a.deadline, a.order) < (b.deadline, b.order) }
        static func == (a: Timer, b: Timer) -> Bool { a.deadline == b.deadline && a.order == b.order }
    }
    private enum Fire {
        case job(UnownedJob)
        case wake(UInt64)
    }

    private struct State {
        var ready: [UnownedJob] = []
        var readyHead = 0
        var timers = TimerHeap<Timer>()
        var now: UInt64 = 0
        var order: UInt64 = 0
        var sleepers: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var rng: UInt64
        var foreign = 0
        var jobs: UInt64 = 0
    }

    private let state: Mutex<State>
    private let thread = Mutex<pthread_t?>(nil)
    private let wakeup = NSCondition()

    /// Creates a simulation whose random numbers (`Runtime.random`) come from `seed`.
    package init(seed: UInt64) {
        state = Mutex(State(rng: seed))
    }

    /// Virtual nanoseconds since the simulation started.
    package var nanoseconds: UInt64 { state.withLock { $0.now } }
    /// Jobs run so far.
    package var jobsRun: UInt64 { state.withLock { $0.jobs } }
    /// Jobs that arrived from another thread: each one is a source of nondeterminism.
    package var foreignEnqueues: Int { state.withLock { $0.foreign } }

    /// The next pseudo-random number of the run (SplitMix64).
    package func random() -> UInt64 {
        state.withLock { s in
            s.rng &+= 0x9E37_79B9_7F4A_7C15
            var z = s.rng
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    // MARK: running

    /// Why a run ended early.
    package enum Failure: Error, CustomStringConvertible {
        /// Nothing could run and no timer was set, yet `body` had not returned.
        case stalled(atNanoseconds: UInt64)
        /// Virtual time passed `limit` before `body` returned.
        case overran(limitNanoseconds: UInt64)
        /// Another simulation runs in this process.
        case busy

        package var description: String {
            switch self {
            case let .stalled(t):
                return "the simulation stalled at \(Double(t) / 1e9) s: no task could run and none was waiting for a time "
                    + "(a task waits for something outside the simulation)"
            case let .overran(l): return "the simulation ran past its limit of \(Double(l) / 1e9) s of virtual time"
            case .busy: return "another simulation runs in this process"
            }
        }
    }

    /// Runs `body`, and every task it starts, on this thread in virtual time, and returns its
    /// result. Blocks the calling thread until `body` returns; `limit` bounds virtual time.
    /// - Parameter foreignWait: how long (real time) to wait for another thread's job when
    ///   nothing here can run, before calling the run stalled.
    package func run<T: Sendable>(limit: Duration = .seconds(3600), foreignWait: Duration = .seconds(5),
                                  _ body: @escaping @Sendable () async throws -> T) throws -> T {
        guard Runtime.install(self) else { throw Failure.busy }
        thread.withLock { $0 = pthread_self() }
        SimulationHooks.install(self)
        defer {
            SimulationHooks.uninstall()
            Runtime.uninstall(self)
            thread.withLock { $0 = nil }
            handBack()
        }
        let outcome = Mutex<Result<T, Error>?>(nil)
        Task.detached(executorPreference: self) {
            let r: Result<T, Error>
            do { r = .success(try await body()) } catch { r = .failure(error) }
            outcome.withLock { $0 = r }
        }
        let limitNanos = UInt64(limit.components.seconds) * 1_000_000_000
        while true {
            if let r = outcome.withLock({ $0 }) { return try r.get() }
            switch next() {
            case let .job(job):
                job.runSynchronously(on: asUnownedTaskExecutor())
            case let .wake(c, at):
                if at > limitNanos { throw Failure.overran(limitNanoseconds: limitNanos) }
                c.resume()
            case let .advanced(to):
                if to > limitNanos { throw Failure.overran(limitNanoseconds: limitNanos) }
            case .idle:
                // Only a foreign thread can still make progress: give it a moment (real time).
                wakeup.lock()
                let arrived = wakeup.wait(until: Date().addingTimeInterval(Double(Self.nanoseconds(foreignWait)) / 1e9))
                wakeup.unlock()
                if !arrived, case .idle = peekIdle() {
                    throw Failure.stalled(atNanoseconds: nanoseconds)
                }
            }
        }
    }

    /// What the run left (tasks still waiting: a session's timers, a node not stopped) goes to
    /// the system's executor with the virtual time it still had to wait, now in real time: no
    /// task is left suspended for ever, and process-wide state such a task holds is released.
    private func handBack() {
        let (jobs, timers, sleepers, now) = state.withLock { s in
            let left = (Array(s.ready[s.readyHead...]), s.timers.drain(), s.sleepers, s.now)
            s.ready.removeAll()
            s.readyHead = 0
            s.sleepers.removeAll()
            return left
        }
        for j in jobs { _swiftTaskEnqueueGlobal(j) }
        for t in timers {
            let wait = t.deadline > now ? t.deadline - now : 0
            switch t.fire {
            case let .job(j): _swiftTaskEnqueueGlobalWithDelay(wait, j)
            case let .wake(id):
                guard let c = sleepers[id] else { continue }
                Task.detached {
                    try? await Task.sleep(nanoseconds: wait)
                    c.resume()
                }
            }
        }
    }

    private enum Step {
        case job(UnownedJob)
        case wake(CheckedContinuation<Void, Never>, at: UInt64)
        case advanced(UInt64)
        case idle
    }

    private func next() -> Step {
        state.withLock { s in
            if s.readyHead < s.ready.count {
                let job = s.ready[s.readyHead]
                s.readyHead += 1
                if s.readyHead == s.ready.count {
                    s.ready.removeAll(keepingCapacity: true)
                    s.readyHead = 0
                }
                s.jobs += 1
                return .job(job)
            }
            guard let t = s.timers.popMin() else { return .idle }
            s.now = max(s.now, t.deadline)
            switch t.fire {
            case let .job(job):
                s.ready.append(job)
                return .advanced(s.now)
            case let .wake(id):
                guard let c = s.sleepers.removeValue(forKey: id) else { return .advanced(s.now) }
                return .wake(c, at: s.now)
            }
        }
    }

    private func peekIdle() -> Step {
        state.withLock { s in s.readyHead < s.ready.count || !s.timers.isEmpty ? .advanced(s.now) : .idle }
    }

    // MARK: jobs from the runtime

    package func enqueue(_ job: consuming ExecutorJob) { enqueue(UnownedJob(job)) }

    /// Whether the caller runs on the thread that runs the simulation.
    package var isSimulationThread: Bool {
        thread.withLock { t in t.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    package func enqueue(_ job: UnownedJob) {
        let foreign = !isSimulationThread
        state.withLock { s in
            s.ready.append(job)
            if foreign { s.foreign += 1 }
        }
        if foreign {
            wakeup.lock()
            wakeup.signal()
            wakeup.unlock()
        }
    }

    /// A job to run `nanoseconds` of virtual time from now.
    func enqueue(_ job: UnownedJob, afterNanoseconds delay: UInt64) {
        state.withLock { s in
            s.order += 1
            s.timers.insert(Timer(deadline: s.now &+ delay, order: s.order, fire: .job(job)))
        }
    }

    package func enqueue<C: _Concurrency.Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        let d = (delay as? Duration) ?? .zero
        enqueue(UnownedJob(job), afterNanoseconds: Self.nanoseconds(d))
    }

    /// A deadline on a real clock (`Task.sleep(until:)`, and `Task.sleep(nanoseconds:)`, which
    /// the runtime turns into one) is taken as the delay it was meant to be, rounded to the
    /// millisecond: the few microseconds between its computation and this call must not make
    /// one run differ from the next. PeerLink's own waits use `Runtime.sleep`, which is exact.
    package func enqueue<C: _Concurrency.Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        let d = (clock.now.duration(to: instant) as? Duration) ?? .zero
        let ms = (Self.nanoseconds(d) + 500_000) / 1_000_000
        enqueue(UnownedJob(job), afterNanoseconds: ms * 1_000_000)
    }

    static func nanoseconds(_ d: Duration) -> UInt64 {
        let c = d.components
        guard c.seconds >= 0 else { return 0 }
        return UInt64(c.seconds) &* 1_000_000_000 &+ UInt64(max(0, c.attoseconds) / 1_000_000_000)
    }

    // MARK: sleeping

    /// Suspends the calling task for `nanoseconds` of virtual time; returns early, throwing
    /// `CancellationError`, when the task is cancelled.
    func sleep(nanoseconds delay: UInt64) async throws {
        let id: UInt64 = state.withLock { s in
            s.order += 1
            return s.order
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let cancelled: Bool = state.withLock { s in
                    if Task.isCancelled { return true }
                    s.sleepers[id] = c
                    s.timers.insert(Timer(deadline: s.now &+ delay, order: id, fire: .wake(id)))
                    return false
                }
                if cancelled { c.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.resume()
        }
        try Task.checkCancellation()
    }
}

/// A binary min-heap.
struct TimerHeap<Element: Comparable> {
    private var items: [Element] = []
    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }

    mutating func insert(_ e: Element) {
        items.append(e)
        var i = items.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            guard items[i] < items[p] else { break }
            items.swapAt(i, p)
            i = p
        }
    }

    /// Every element, in no particular order; the heap is left empty.
    mutating func drain() -> [Element] {
        defer { items.removeAll() }
        return items
    }

    mutating func popMin() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let min = items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < items.count, items[l] < items[m] { m = l }
            if r < items.count, items[r] < items[m] { m = r }
            guard m != i else { break }
            items.swapAt(i, m)
            i = m
        }
        return min
    }
}

@_silgen_name("swift_task_enqueueGlobal")
private func _swiftTaskEnqueueGlobal(_ job: UnownedJob)

@_silgen_name("swift_task_enqueueGlobalWithDelay")
private func _swiftTaskEnqueueGlobalWithDelay(_ delay: UInt64, _ job: UnownedJob)
