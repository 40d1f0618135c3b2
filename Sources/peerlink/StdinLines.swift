import Foundation

/// Lines typed on standard input, read on a background thread and handed out one at a time
/// (chat input and invitation prompts share them). `next()` returns nil at end of input.
final class LineReader: @unchecked Sendable {
    static let shared = LineReader()
    private let lock = NSLock()
    private var lines: [String] = []
    private var ended = false
    private var waiter: CheckedContinuation<Void, Never>?
    private var started = false

    private func startIfNeeded() {
        let start: Bool = lock.withLock { defer { started = true }; return !started }
        guard start else { return }
        let t = Thread { [self] in
            while let line = readLine(strippingNewline: true) { push { lines.append(line) } }
            push { ended = true }
        }
        t.start()
    }

    private func push(_ change: () -> Void) {
        let w: CheckedContinuation<Void, Never>? = lock.withLock { change(); defer { waiter = nil }; return waiter }
        w?.resume()
    }

    func next() async -> String? {
        startIfNeeded()
        while true {
            let r: String?? = lock.withLock {
                if !lines.isEmpty { return .some(lines.removeFirst()) }
                return ended ? .some(nil) : nil
            }
            if let r { return r }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now: Bool = lock.withLock {
                    if !lines.isEmpty || ended { return true }
                    waiter = c
                    return false
                }
                if now { c.resume() }
            }
        }
    }
}
