import Foundation

/// Work started without waiting for it (a Wi-Fi Direct group being removed) that someone
/// must be able to wait for later: `Session.disconnect()` waits for the node's teardowns, so
/// a process that exits right after it leaves no group up on the radio.
final class PendingWork: @unchecked Sendable {
    private let lock = NSLock()
    private var tasks: [UInt64: Task<Void, Never>] = [:]
    private var next: UInt64 = 0

    /// Starts `body` at once; it counts as pending until it returns.
    func start(_ body: @escaping @Sendable () async -> Void) {
        lock.withLock {
            let id = next
            next += 1
            tasks[id] = Task { [weak self] in
                await body()
                _ = self?.lock.withLock { self?.tasks.removeValue(forKey: id) }
            }
        }
    }

    /// Returns once everything started so far (and anything it started) has finished.
    func wait() async {
        while let t = lock.withLock({ tasks.values.first }) { await t.value }
    }
}
