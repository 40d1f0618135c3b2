import CPeerLinkSys
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension IOLoop {
    /// How a wait for a descriptor ended.
    package enum WaitOutcome: Sendable, Equatable {
        /// The descriptor is ready (or has an error or hang-up to report: read it).
        case ready
        case timedOut
        case cancelled
    }

    /// Waits, without a thread of its own, until `fd` is ready for `events` (`PEERLINK_EPOLLIN`
    /// or `PEERLINK_EPOLLOUT`), `timeout` seconds pass, or the task is cancelled: a
    /// non-blocking connect waits here for `EPOLLOUT`, an accept loop for `EPOLLIN`. The
    /// descriptor is out of the loop's set again when this returns.
    package func wait(for events: UInt32, on fd: Int32, timeout: Double) async -> WaitOutcome {
        let waiter = DescriptorWaiter()
        let token = attach(waiter)
        let deadline = Task.detached {
            try? await Runtime.sleep(seconds: timeout)
            waiter.finish(.timedOut)
        }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<WaitOutcome, Never>) in
                guard waiter.arm(c) else { return }
                // Not pollable (or not open): the caller's next call on it says why.
                if control(PEERLINK_EPOLL_ADD, fd: fd, events: events, token: token) != 0 { waiter.finish(.ready) }
            }
        } onCancel: {
            waiter.finish(.cancelled)
        }
        deadline.cancel()
        _ = control(PEERLINK_EPOLL_DEL, fd: fd, events: 0, token: token)
        detach(token)
        return outcome
    }
}

/// One wait for a descriptor: resumed once, by readiness, its deadline or cancellation.
private final class DescriptorWaiter: IOLoopHandler, Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<IOLoop.WaitOutcome, Never>?, outcome: IOLoop.WaitOutcome?)>((nil, nil))

    /// Stores the continuation; false when the wait already ended (cancelled first), in
    /// which case the continuation has been resumed.
    func arm(_ c: CheckedContinuation<IOLoop.WaitOutcome, Never>) -> Bool {
        let early: IOLoop.WaitOutcome? = state.withLock { s in
            if let o = s.outcome { return o }
            s.continuation = c
            return nil
        }
        if let early { c.resume(returning: early); return false }
        return true
    }

    func finish(_ outcome: IOLoop.WaitOutcome) {
        let c: CheckedContinuation<IOLoop.WaitOutcome, Never>? = state.withLock { s in
            guard s.outcome == nil else { return nil }
            s.outcome = outcome
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume(returning: outcome)
    }

    func ioReady(_ events: UInt32, scratch: UnsafeMutableRawBufferPointer) { finish(.ready) }
}
