import Foundation
import Synchronization

/// Work started without waiting for it (a Wi-Fi Direct group being removed) that someone
/// must be able to wait for later: `Session.disconnect()` waits for the node's teardowns, so
/// a process that exits right after it leaves no group up on the radio.
final class PendingWork: Sendable {
    private let state = Mutex<(tasks: [UInt64: Task<Void, Never>], next: UInt64)>(([:], 0))

    /// Starts `body` at once; it counts as pending until it returns.
    func start(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { s in
            let id = s.next
            s.next += 1
            s.tasks[id] = Task { [weak self] in
                await body()
                _ = self?.state.withLock { $0.tasks.removeValue(forKey: id) }
            }
        }
    }

    /// Returns once everything started so far (and anything it started) has finished.
    func wait() async {
        while let t = state.withLock({ $0.tasks.values.first }) { await t.value }
    }
}

/// Things begun elsewhere that someone must be able to wait out: invitations accepted into a
/// session whose link has not joined it yet, so that `Session.disconnect()` leaves their
/// peers too instead of racing them.
final class PendingCount: Sendable {
    private let state = Mutex<(count: Int, waiters: [CheckedContinuation<Void, Never>])>((0, []))

    func begin() { state.withLock { $0.count += 1 } }

    func end() {
        let woken: [CheckedContinuation<Void, Never>] = state.withLock { s in
            s.count -= 1
            guard s.count == 0 else { return [] }
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for w in woken { w.resume() }
    }

    /// Returns once nothing is pending.
    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now: Bool = state.withLock { s in
                if s.count == 0 { return true }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
}
