import CPeerLinkSys
import Dispatch
import Foundation

/// Runs blocking work (a connect with a deadline, a D-Bus round trip, hashing a whole file)
/// where blocking is allowed, and hands the result back to the awaiting task.
///
/// Never block Swift's cooperative pool (one thread per core, shared by every task and
/// actor) or GCD's global queues (width-limited, shared with every other user): a few slow
/// calls there stop the node from answering keepalives, or hold back unrelated dials. A call
/// that may take seconds gets a thread of its own; ordered small steps (reading a file being
/// sent) use a serial queue, which GCD backs with threads as needed.
package enum BlockingCall {
    /// Runs `body` on a new thread and returns its result (or error) to the awaiting task.
    /// Cancelling the task does not interrupt `body`: give the call its own deadline.
    /// - Parameter name: the thread's name for debuggers and `top -H` (Linux shows the first
    ///   15 bytes).
    package static func run<T: Sendable, E: Error>(_ name: String, _ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { c in
            detach(name) { c.resume(returning: Result { () throws(E) -> T in try body() }) }
        }
        return try result.get()
    }

    /// Runs `body` on a new thread without waiting for it (teardown a caller need not await).
    package static func detach(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            // Named from inside: Foundation's `Thread.name` does not always reach Linux.
            _ = peerlink_name_this_thread(name)
            body()
        }
        thread.start()
    }

    /// Runs `body` on `queue` (a serial queue that keeps a stream of small steps in order)
    /// and returns its result to the awaiting task.
    package static func run<T: Sendable>(on queue: DispatchQueue, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            queue.async { c.resume(with: Result { try body() }) }
        }
    }
}
