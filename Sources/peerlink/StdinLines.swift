import Foundation

/// Lines typed on standard input, read on a background thread and handed out one at a time.
/// Several tasks may wait at once (the chat input loop and an invitation prompt): each line
/// goes to one waiter, prompts first, so an answer to "Accept?" is never sent as a message.
final class LineReader: @unchecked Sendable {
    static let shared = LineReader()
    private let lock = NSLock()
    private var lines: [String] = []
    private var ended = false
    private var waiters: [CheckedContinuation<String?, Never>] = []
    private var started = false

    private func startIfNeeded() {
        let start: Bool = lock.withLock { defer { started = true }; return !started }
        guard start else { return }
        let t = Thread { [self] in
            while let line = readLine(strippingNewline: true) { deliver(line) }
            finish()
        }
        t.start()
    }

    private func deliver(_ line: String) {
        let w: CheckedContinuation<String?, Never>? = lock.withLock {
            if waiters.isEmpty { lines.append(line); return nil }
            return waiters.removeFirst()
        }
        w?.resume(returning: line)
    }

    private func finish() {
        let all: [CheckedContinuation<String?, Never>] = lock.withLock {
            ended = true
            defer { waiters.removeAll() }
            return waiters
        }
        for w in all { w.resume(returning: nil) }
    }

    /// The next line; nil at end of input. `prompt: true` jumps ahead of other waiters.
    func next(prompt: Bool = false) async -> String? {
        startIfNeeded()
        return await withCheckedContinuation { c in
            let ready: String?? = lock.withLock {
                if !lines.isEmpty { return .some(lines.removeFirst()) }
                if ended { return .some(nil) }
                if prompt { waiters.insert(c, at: 0) } else { waiters.append(c) }
                return .none
            }
            if case let .some(value) = ready { c.resume(returning: value) }
        }
    }
}
