import CPeerLinkSys
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Something the I/O loop calls when its descriptor is ready (`FDConnection`).
protocol IOLoopHandler: AnyObject, Sendable {
    /// Called on the loop's thread with the epoll event bits (`PEERLINK_EPOLL*`). `scratch` is
    /// the loop's read buffer, valid for this call only. Must not block.
    func ioReady(_ events: UInt32, scratch: UnsafeMutableRawBufferPointer)
}

/// One thread waiting in `epoll_wait` for every registered socket of the process.
///
/// Level-triggered: a descriptor stays reported while it is ready for what its interest mask
/// asks, so a handler may stop after a budget (fairness between connections) and is called
/// again on the next turn, and no readiness can be lost between two turns. Owners keep the
/// mask to what they can act on now (`EPOLLIN` only while they have room for more input,
/// `EPOLLOUT` only while a write waits for room) and change it with `control`, from any
/// thread: adding a bit re-polls the descriptor in the kernel, so a ready one is reported at
/// once. That is the loop's only wake-up: it needs no eventfd or task queue of its own.
///
/// Events carry a token, not the descriptor, and handlers are held weakly: an event that
/// arrives for a connection being released, or for a number the kernel has already reused,
/// finds no handler and is dropped.
package final class IOLoop: @unchecked Sendable {
    /// The process's loop, started on first use.
    package static let shared = IOLoop(name: "peerlink.io")

    private let epfd: Int32
    private let createError: Int32
    private let lock = NSLock()
    private var handlers: [UInt64: WeakHandler] = [:]  // under lock
    private var nextToken: UInt64 = 1  // under lock

    private struct WeakHandler { weak var handler: (any IOLoopHandler)? }

    /// Largest read per call (the handlers' scratch buffer).
    static let scratchSize = 256 * 1024

    init(name: String) {
        epfd = peerlink_epoll_create()
        createError = epfd < 0 ? errno : 0
        if epfd >= 0 {
            BlockingCall.thread(name) { [self] in run() }
        }
    }

    /// A token for `control`; `handler` is called for its events until `detach`.
    func attach(_ handler: any IOLoopHandler) -> UInt64 {
        lock.withLock {
            defer { nextToken += 1 }
            handlers[nextToken] = WeakHandler(handler: handler)
            return nextToken
        }
    }

    /// Forgets `token` (its descriptor must already be out of the set, or closed).
    func detach(_ token: UInt64) {
        _ = lock.withLock { handlers.removeValue(forKey: token) }
    }

    /// `epoll_ctl`: `op` is `PEERLINK_EPOLL_ADD`, `_MOD` or `_DEL`. Returns 0, or the errno.
    func control(_ op: Int32, fd: Int32, events: UInt32, token: UInt64) -> Int32 {
        guard epfd >= 0 else { return createError }
        return peerlink_epoll_ctl(epfd, op, fd, events, token) == 0 ? 0 : errno
    }

    private func run() {
        let capacity = 128
        var events = [UInt32](repeating: 0, count: capacity)
        var tokens = [UInt64](repeating: 0, count: capacity)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: IOLoop.scratchSize, alignment: 16)
        var ready: [(any IOLoopHandler, UInt32)] = []
        ready.reserveCapacity(capacity)
        while true {
            let n = peerlink_epoll_wait(epfd, &events, &tokens, Int32(capacity), -1)
            if n < 0 {
                if errno == EINTR { continue }
                // Only a broken epoll descriptor gets here; nothing could be served any more.
                fatalError("peerlink.io: epoll_wait failed: errno \(errno)")
            }
            lock.withLock {
                for i in 0..<Int(n) {
                    if let h = handlers[tokens[i]]?.handler { ready.append((h, events[i])) }
                }
            }
            for (h, e) in ready { h.ioReady(e, scratch: scratch) }
            // Released outside the lock: a connection's last reference may go here, and its
            // deinit detaches itself.
            ready.removeAll(keepingCapacity: true)
        }
    }
}
