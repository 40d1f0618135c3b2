import CPeerLinkSys
import Dispatch
import Foundation

/// Runs blocking work (a connect with a deadline, a D-Bus round trip, hashing a whole file)
/// where blocking is allowed, and hands the result back to the awaiting task.
///
/// Never block Swift's cooperative pool (one thread per core, shared by every task and
/// actor) or GCD's global queues (width-limited, shared with every other user): a few slow
/// calls there stop the node from answering keepalives, or hold back unrelated dials. Such
/// work goes to the process's `BlockingPool` (a few threads, a queue); ordered steps (one
/// file's reads or writes) go through a `BlockingPool.Lane`. Only a loop that runs for the
/// process's life (the I/O loop, a Bluetooth listener) gets a thread of its own (`thread`).
public enum BlockingCall {
    /// Runs `body` on the blocking pool and returns its result (or error) to the awaiting
    /// task. Cancelling the task does not interrupt `body`: give the call its own deadline.
    /// - Parameter name: what the job is, for diagnostics.
    public static func run<T: Sendable, E: Error>(_ name: String, _ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        try await BlockingPool.shared.run(name, body)
    }

    /// Runs `body` on the blocking pool without waiting for it (teardown a caller need not await).
    public static func detach(_ name: String, _ body: @escaping @Sendable () -> Void) {
        BlockingPool.shared.post(name, body)
    }

    /// Starts a thread of its own for a loop that runs as long as the process.
    /// - Parameter name: the thread's name for debuggers and `top -H` (Linux shows the first
    ///   15 bytes).
    public static func thread(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            // Named from inside: Foundation's `Thread.name` does not always reach Linux.
            _ = peerlink_name_this_thread(name)
            body()
        }
        thread.start()
    }
}
