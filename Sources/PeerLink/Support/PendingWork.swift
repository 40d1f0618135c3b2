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
