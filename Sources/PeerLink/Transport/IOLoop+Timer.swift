import Foundation

/// A one-shot timer for the libraries whose main loop `IOWatch` stands in for (Avahi's
/// timeouts): once armed, the handler runs on Swift's pool when the delay has passed, unless
/// the timer was re-armed or cancelled first. Waits with `Runtime.sleep`; no thread of its own.
///
/// A call that has already begun when the timer is re-armed or cancelled still runs to its
/// end (the library's own lock orders it): a handler that must not act late checks, under
/// that lock, that it is still wanted.
package final class IOTimer: @unchecked Sendable {
    private let handler: @Sendable () -> Void
    private let lock = NSLock()
    private var generation: UInt64 = 0  // under lock
    private var sleeper: Task<Void, Never>?  // under lock

    package init(handler: @escaping @Sendable () -> Void) {
        self.handler = handler
    }

    deinit { sleeper?.cancel() }

    /// Arms the timer to fire once after `nanoseconds` (replacing any earlier arming); nil
    /// disarms it.
    package func schedule(afterNanoseconds nanoseconds: UInt64?) {
        lock.withLock {
            generation &+= 1
            sleeper?.cancel()
            sleeper = nil
            guard let nanoseconds else { return }
            let armed = generation
            sleeper = Task.detached { [weak self] in
                if nanoseconds > 0 {
                    do { try await Runtime.sleep(nanoseconds: nanoseconds) } catch { return }
                }
                self?.fire(armed)
            }
        }
    }

    /// Disarms the timer (idempotent).
    package func cancel() { schedule(afterNanoseconds: nil) }

    /// Whether the timer is armed and has not fired yet.
    package var isArmed: Bool { lock.withLock { sleeper != nil } }

    private func fire(_ armed: UInt64) {
        let current: Bool = lock.withLock {
            guard generation == armed else { return false }
            sleeper = nil
            return true
        }
        if current { handler() }
    }
}
