import Dispatch

/// Runs blocking work (file reads and writes, hashing) on dispatch queues, never on Swift's
/// cooperative threads or a peer's actor: a multi-gigabyte hash there would stop the node from
/// answering keepalives.
enum BlockingWork {
    /// Queue for one-off blocking jobs (hashing whole files).
    static let shared = DispatchQueue(label: "peerlink.blocking", attributes: .concurrent)

    /// Runs `body` on `queue` and returns its result to the awaiting task.
    static func run<T: Sendable>(on queue: DispatchQueue = shared, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            queue.async { c.resume(with: Result { try body() }) }
        }
    }
}
