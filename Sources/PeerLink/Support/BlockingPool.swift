import CPeerLinkSys
import Foundation
import Synchronization

/// The process's few threads for work that blocks: a D-Bus round trip, a Bluetooth connect
/// with a deadline, hashing or writing a file. Jobs wait in one queue, first in, first out,
/// and run on at most `maxThreads` threads, started when work comes and kept while it keeps
/// coming: however many peers, dials and transfers a node has, it never has more threads
/// than this for them. Work that must stay in order (one file's writes) goes through a
/// `Lane`: its jobs run one at a time, in the order given, on whichever thread is free.
///
/// A job must not wait for another job of the pool (that one could be queued behind it).
package final class BlockingPool: @unchecked Sendable {
    /// The pool of the process.
    package static let shared = BlockingPool(maxThreads: 8, name: "pl.pool")

    private struct Job {
        let name: String
        let body: @Sendable () -> Void
    }

    package let maxThreads: Int
    private let name: String
    /// Guards the fields below; workers wait on it for jobs.
    private let condition = NSCondition()
    nonisolated(unsafe) private var queue: [Job] = []
    nonisolated(unsafe) private var head = 0
    nonisolated(unsafe) private var threads = 0
    nonisolated(unsafe) private var idle = 0

    /// How long a thread with nothing to do waits for work before it ends.
    private let idleTimeout: TimeInterval

    package init(maxThreads: Int, name: String, idleTimeout: TimeInterval = 30) {
        self.maxThreads = max(1, maxThreads)
        self.name = name
        self.idleTimeout = idleTimeout
    }

    /// Threads the pool runs now (started and not ended).
    package var threadCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return threads
    }

    /// Queues `body`; it runs on one of the pool's threads.
    package func post(_ jobName: String, _ body: @escaping @Sendable () -> Void) {
        condition.lock()
        queue.append(Job(name: jobName, body: body))
        // Each idle thread takes one waiting job; more waiting jobs than that get a new thread.
        let start = queue.count - head > idle && threads < maxThreads
        if start { threads += 1 }
        let index = threads
        condition.signal()
        condition.unlock()
        if start {
            let thread = Thread { [self] in
                _ = peerlink_name_this_thread("\(name).\(index)")
                work()
            }
            thread.start()
        }
    }

    /// Runs `body` on the pool and returns its result (or error) to the awaiting task.
    package func run<T: Sendable, E: Error>(_ jobName: String, _ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { c in
            post(jobName) { c.resume(returning: Result { () throws(E) -> T in try body() }) }
        }
        return try result.get()
    }

    /// A worker: runs jobs while there are any; waits up to `idleTimeout` for more, then ends.
    private func work() {
        condition.lock()
        while true {
            if head < queue.count {
                let job = queue[head]
                head += 1
                if head == queue.count { queue.removeAll(keepingCapacity: true); head = 0 }
                condition.unlock()
                job.body()
                condition.lock()
                continue
            }
            idle += 1
            let woken = condition.wait(until: Date().addingTimeInterval(idleTimeout))
            idle -= 1
            if !woken, head >= queue.count {
                threads -= 1
                condition.unlock()
                return
            }
        }
    }

    /// Jobs that must run one at a time and in order (one file's reads or writes), on the pool.
    package final class Lane: Sendable {
        private let pool: BlockingPool
        private let name: String
        private let pending = Mutex<(jobs: [@Sendable () -> Void], running: Bool)>(([], false))

        package init(_ name: String, pool: BlockingPool = .shared) {
            self.name = name
            self.pool = pool
        }

        /// Queues `body` behind this lane's earlier jobs.
        package func post(_ body: @escaping @Sendable () -> Void) {
            let start: Bool = pending.withLock { p in
                p.jobs.append(body)
                guard !p.running else { return false }
                p.running = true
                return true
            }
            if start { pool.post(name) { [self] in drain() } }
        }

        /// Runs `body` behind this lane's earlier jobs and returns its result.
        package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
            try await withCheckedThrowingContinuation { c in post { c.resume(with: Result { try body() }) } }
        }

        /// Runs the lane's jobs until none is left (one pool job at a time for the lane).
        private func drain() {
            while true {
                let next: (@Sendable () -> Void)? = pending.withLock { p in
                    guard !p.jobs.isEmpty else { p.running = false; return nil }
                    return p.jobs.removeFirst()
                }
                guard let next else { return }
                next()
            }
        }
    }
}
