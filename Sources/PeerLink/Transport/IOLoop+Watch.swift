import CPeerLinkSys
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A descriptor watched on the I/O loop for as long as its owner wants: the handler runs on
/// the loop's thread each time the descriptor is ready for what the watch asks (level-
/// triggered: on every turn while it stays ready). For the watch descriptors of libraries
/// that expect a main loop (rtnetlink, libdbus, Avahi). Handlers must not block.
///
/// The watch registers its own duplicate of the descriptor, so two watches may share one
/// (libdbus watches a socket once for reading and once for writing), and a number reused
/// after the owner closed it is never taken for it. Cancel (or release) the watch before
/// closing the descriptor. An empty `events` takes the descriptor out of the loop's set, so
/// a disabled watch hears nothing, not even a hang-up.
package final class IOWatch: IOLoopHandler, @unchecked Sendable {
    /// What a descriptor is ready for.
    package struct Events: OptionSet, Sendable, Hashable {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        package static let readable = Events(rawValue: PEERLINK_EPOLLIN)
        package static let writable = Events(rawValue: PEERLINK_EPOLLOUT)
        /// Reported whatever was asked for, while the watch is in the set.
        package static let error = Events(rawValue: PEERLINK_EPOLLERR)
        /// Reported whatever was asked for, while the watch is in the set.
        package static let hangUp = Events(rawValue: PEERLINK_EPOLLHUP)
    }

    /// Called on the loop's thread with what the descriptor is ready for.
    package typealias Handler = @Sendable (Events) -> Void

    private let loop: IOLoop
    private let handler: Handler
    private let fd: Int32
    private var token: UInt64 = 0
    private let condition = NSCondition()
    // Under `condition`:
    private var events: Events
    private var inSet = false
    private var cancelled = false
    private var runningOn: pthread_t?

    /// Starts watching `fd` on the process's I/O loop for `events`.
    package convenience init(fd: Int32, events: Events, handler: @escaping Handler) throws {
        try self.init(loop: .shared, fd: fd, events: events, handler: handler)
    }

    init(loop: IOLoop, fd: Int32, events: Events, handler: @escaping Handler) throws {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EBADF) }
        self.loop = loop
        self.fd = copy
        self.handler = handler
        self.events = []
        token = loop.attach(self)
        let error = condition.withLock { apply(events) }
        if error != 0 {
            cancel()
            throw POSIXError(POSIXErrorCode(rawValue: error) ?? .EIO)
        }
    }

    deinit { cancel(waitForHandler: false) }

    /// What the watch asks for now.
    package var interest: Events { condition.withLock { events } }

    /// Changes what the watch asks for (from any thread, the handler included). Returns 0, or
    /// the errno of `epoll_ctl`.
    @discardableResult
    package func update(_ events: Events) -> Int32 {
        condition.withLock { cancelled ? 0 : apply(events) }
    }

    /// Stops the watch. No handler call starts after this returns. With `waitForHandler`, a
    /// call running on the loop's thread has also ended, unless this is called from that
    /// handler; pass false when the caller holds something the handler waits for (a library
    /// lock), and let the handler check under that lock that it is still wanted. Idempotent.
    package func cancel(waitForHandler: Bool = true) {
        condition.lock()
        defer { condition.unlock() }
        if !cancelled {
            cancelled = true
            if inSet { _ = loop.control(PEERLINK_EPOLL_DEL, fd: fd, events: 0, token: token) }
            inSet = false
            loop.detach(token)
            close(fd)
        }
        guard waitForHandler else { return }
        while let thread = runningOn, pthread_equal(thread, pthread_self()) == 0 { condition.wait() }
    }

    /// Puts the descriptor in or out of the set, or changes its mask (lock held).
    private func apply(_ new: Events) -> Int32 {
        let mask = new.intersection([.readable, .writable]).rawValue
        let error: Int32
        if mask == 0 {
            error = inSet ? loop.control(PEERLINK_EPOLL_DEL, fd: fd, events: 0, token: token) : 0
            inSet = false
        } else {
            error = loop.control(inSet ? PEERLINK_EPOLL_MOD : PEERLINK_EPOLL_ADD, fd: fd, events: mask, token: token)
            if error == 0 { inSet = true }
        }
        if error == 0 { events = new }
        return error
    }

    func ioReady(_ raw: UInt32, scratch: UnsafeMutableRawBufferPointer) {
        let go: Bool = condition.withLock {
            guard !cancelled, inSet else { return false }
            runningOn = pthread_self()
            return true
        }
        guard go else { return }
        handler(Events(rawValue: raw))
        condition.withLock {
            runningOn = nil
            condition.broadcast()
        }
    }
}
