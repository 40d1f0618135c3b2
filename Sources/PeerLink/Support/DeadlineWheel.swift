import Foundation
import Synchronization

/// One timer for every peer channel of the process. A channel waits here for its next
/// deadline, saying how late it may be woken (`latest`); the wheel sleeps until the earliest
/// `latest` of all waiters and then wakes every waiter whose deadline has come. Idle sessions
/// whose keepalives fall within a tenth of a second of each other are woken together: one
/// thread wake-up for many peers, instead of one each (docs/ARCHITECTURE.md).
///
/// A wait ends early, returning false, when it is cancelled (the channel has an earlier
/// deadline now, or ended).
final class DeadlineWheel: Sendable {
    /// The process's wheel.
    static let shared = DeadlineWheel()

    private struct Waiter {
        let at: UInt64
        let latest: UInt64
        var continuation: CheckedContinuation<Bool, Never>?
        var cancelled = false
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        /// The instant the driver sleeps until, and the driver (nil while nobody waits).
        var wakeAt: UInt64?
        var driver: Task<Void, Never>?
    }

    private let state = Mutex(State())

    /// Waits until `at` (monotonic ms; woken no later than `latest`). True when the deadline
    /// came, false when cancelled first.
    func wait(until at: UInt64, latest: UInt64) async -> Bool {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            s.waiters[s.nextID] = Waiter(at: at, latest: max(at, latest))
            return s.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                let resumeNow: Bool = state.withLock { s in
                    guard var w = s.waiters[id], !w.cancelled else {
                        s.waiters[id] = nil
                        return true
                    }
                    w.continuation = c
                    s.waiters[id] = w
                    return false
                }
                if resumeNow { c.resume(returning: false) }
                reschedule()
            }
        } onCancel: {
            let c: CheckedContinuation<Bool, Never>? = state.withLock { s in
                guard var w = s.waiters[id] else { return nil }
                guard let c = w.continuation else {
                    w.cancelled = true  // not stored yet: it returns as soon as it is
                    s.waiters[id] = w
                    return nil
                }
                s.waiters[id] = nil
                return c
            }
            c?.resume(returning: false)
        }
    }

    /// Waiters now (tests).
    var count: Int { state.withLock { $0.waiters.count } }

    /// Makes the driver sleep until the earliest `latest` of all waiters.
    private func reschedule() {
        let start: (at: UInt64, old: Task<Void, Never>?)? = state.withLock { s in
            guard let earliest = s.waiters.values.map(\.latest).min() else { return nil }
            if let w = s.wakeAt, w <= earliest, s.driver != nil { return nil }
            let old = s.driver
            s.wakeAt = earliest
            s.driver = nil
            return (earliest, old)
        }
        guard let start else { return }
        start.old?.cancel()
        let driver = Task.detached { [self] in
            let now = Runtime.milliseconds()
            if start.at > now {
                do { try await Runtime.sleep(nanoseconds: (start.at - now) * 1_000_000) } catch { return }
            }
            fire(scheduledAt: start.at)
        }
        state.withLock { s in if s.wakeAt == start.at, s.driver == nil { s.driver = driver } else { driver.cancel() } }
    }

    /// Wakes every waiter whose deadline has come, then sleeps until the next one.
    private func fire(scheduledAt: UInt64) {
        let now = Runtime.milliseconds()
        let due: [CheckedContinuation<Bool, Never>] = state.withLock { s in
            guard s.wakeAt == scheduledAt else { return [] }
            s.wakeAt = nil
            s.driver = nil
            var out: [CheckedContinuation<Bool, Never>] = []
            for (id, w) in s.waiters where w.at <= now {
                if let c = w.continuation {
                    out.append(c)
                    s.waiters[id] = nil
                }
            }
            return out
        }
        for c in due { c.resume(returning: true) }
        reschedule()
    }
}
