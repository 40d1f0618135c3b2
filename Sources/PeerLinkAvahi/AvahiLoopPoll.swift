import CAvahi
import Foundation
import PeerLink
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Avahi's main-loop interface (`AvahiPoll`) on PeerLink's I/O loop instead of a poll thread
/// of its own: Avahi's watches are `IOWatch`es, its timeouts `IOTimer`s.
///
/// Avahi's callbacks block: they make D-Bus round trips to avahi-daemon (creating a resolver
/// inside a browse callback, committing an entry group). So the I/O loop only notices that
/// a watch is ready, pauses it and queues the callback on this poll's lane of the blocking
/// pool; the watch asks again once the callback has run. Timeouts are queued there too.
///
/// libavahi-client is not thread-safe, so, as with `avahi_threaded_poll`, one lock orders
/// everything: every Avahi callback runs with `withLock` held, and other threads call Avahi
/// only inside `withLock`. The interface's functions are called by Avahi with the lock held;
/// they never wait for a callback, which instead checks under the lock that its watch or
/// timeout still stands.
final class AvahiLoopPoll: @unchecked Sendable {
    private let mutex = AvahiMutex()
    /// Set under the lock by `shutDown`: no callback runs after it.
    private var down = false
    /// Where Avahi's callbacks run, one at a time, in the order they became due.
    private let lane = BlockingPool.Lane("pl.avahi")
    /// The interface handed to Avahi (`userdata` points back here, unretained).
    let api: UnsafeMutablePointer<AvahiPoll>

    init() {
        api = .allocate(capacity: 1)
        api.initialize(to: AvahiPoll())
        api.pointee.userdata = Unmanaged.passUnretained(self).toOpaque()
        api.pointee.watch_new = { api, fd, event, callback, userdata in
            guard let api, let poll = AvahiLoopPoll.from(api), let callback else { return nil }
            return LoopWatch.make(poll: poll, fd: fd, events: event, callback: callback, userdata: userdata)
        }
        api.pointee.watch_update = { w, event in LoopWatch.from(w)?.update(event) }
        api.pointee.watch_get_events = { w in LoopWatch.from(w)?.happened ?? AvahiWatchEvent(rawValue: 0) }
        api.pointee.watch_free = { w in LoopWatch.from(w)?.free() }
        api.pointee.timeout_new = { api, tv, callback, userdata in
            guard let api, let poll = AvahiLoopPoll.from(api), let callback else { return nil }
            return LoopTimeout.make(poll: poll, at: tv, callback: callback, userdata: userdata)
        }
        api.pointee.timeout_update = { t, tv in LoopTimeout.from(t)?.arm(tv) }
        api.pointee.timeout_free = { t in LoopTimeout.from(t)?.free() }
    }

    deinit {
        api.deinitialize(count: 1)
        api.deallocate()
    }

    /// The interface for `avahi_client_new` and friends.
    var interface: UnsafePointer<AvahiPoll> { UnsafePointer(api) }

    /// Runs `body` with the lock held: Avahi's callbacks wait meanwhile. Not from inside one.
    func withLock<T>(_ body: () throws -> T) rethrows -> T { try mutex.withLock(body) }

    /// Whether callbacks may run (lock held).
    var isDown: Bool { down }

    /// Stops every later callback (lock held). What Avahi still frees goes through the
    /// interface as usual.
    func shutDown() { down = true }

    /// Queues `call` on the lane, to run under the lock unless the poll is down by then.
    fileprivate func dispatch(_ call: @escaping @Sendable () -> Void) {
        lane.post { [self] in
            mutex.withLock {
                guard !down else { return }
                call()
            }
        }
    }

    fileprivate static func from(_ api: UnsafePointer<AvahiPoll>) -> AvahiLoopPoll? {
        api.pointee.userdata.map { Unmanaged<AvahiLoopPoll>.fromOpaque($0).takeUnretainedValue() }
    }
}

/// One `AvahiWatch`: Avahi holds a retained reference until `watch_free`.
private final class LoopWatch: @unchecked Sendable {
    private let poll: AvahiLoopPoll
    private let fd: Int32
    private let callback: AvahiWatchCallback
    private let userdata: UnsafeMutableRawPointer?
    private var io: IOWatch?  // set once, before Avahi has the watch
    /// A callback is queued and the watch paused until it has run.
    private let queued = Atomic<Bool>(false)
    // Under the poll's lock:
    /// What Avahi asks for (the watch's interest whenever no callback is queued).
    private var wanted = IOWatch.Events()
    private var freed = false
    /// What the last callback was called for (`watch_get_events`).
    private(set) var happened = AvahiWatchEvent(rawValue: 0)

    private init(poll: AvahiLoopPoll, fd: Int32, callback: @escaping AvahiWatchCallback, userdata: UnsafeMutableRawPointer?) {
        self.poll = poll
        self.fd = fd
        self.callback = callback
        self.userdata = userdata
    }

    static func make(poll: AvahiLoopPoll, fd: Int32, events: AvahiWatchEvent, callback: @escaping AvahiWatchCallback,
                     userdata: UnsafeMutableRawPointer?) -> OpaquePointer? {
        let w = LoopWatch(poll: poll, fd: fd, callback: callback, userdata: userdata)
        w.wanted = Self.ioEvents(events)
        // Asks for nothing until `io` is set, so the handler never sees it unset.
        w.io = try? IOWatch(fd: fd, events: []) { [weak w] ready in w?.ready(ready) }
        guard let io = w.io, io.update(w.wanted) == 0 else { return nil }
        return OpaquePointer(Unmanaged.passRetained(w).toOpaque())
    }

    static func from(_ p: OpaquePointer?) -> LoopWatch? {
        p.map { Unmanaged<LoopWatch>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }

    /// Avahi's event bits are poll's, which are epoll's for these four.
    private static func ioEvents(_ e: AvahiWatchEvent) -> IOWatch.Events {
        IOWatch.Events(rawValue: e.rawValue).intersection([.readable, .writable])
    }

    func update(_ events: AvahiWatchEvent) {
        wanted = Self.ioEvents(events)
        if !queued.load(ordering: .acquiring) { io?.update(wanted) }
    }

    func free() {
        freed = true
        io?.cancel(waitForHandler: false)  // a queued callback sees `freed`
        Unmanaged.passUnretained(self).release()
    }

    /// On the loop's thread: pause the watch and queue the callback (once).
    private func ready(_ events: IOWatch.Events) {
        guard !queued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        io?.update([])
        poll.dispatch { [self] in
            if !freed {
                happened = AvahiWatchEvent(rawValue: events.rawValue)
                callback(OpaquePointer(Unmanaged.passUnretained(self).toOpaque()), fd, happened, userdata)
            }
            queued.store(false, ordering: .releasing)
            if !freed { io?.update(wanted) }
        }
    }
}

/// One `AvahiTimeout`: Avahi holds a retained reference until `timeout_free`.
private final class LoopTimeout: @unchecked Sendable {
    private let poll: AvahiLoopPoll
    private let callback: AvahiTimeoutCallback
    private let userdata: UnsafeMutableRawPointer?
    private var timer: IOTimer?
    // Under the poll's lock:
    private var deadline: timeval?
    private var freed = false

    private init(poll: AvahiLoopPoll, callback: @escaping AvahiTimeoutCallback, userdata: UnsafeMutableRawPointer?) {
        self.poll = poll
        self.callback = callback
        self.userdata = userdata
    }

    static func make(poll: AvahiLoopPoll, at tv: UnsafePointer<timeval>?, callback: @escaping AvahiTimeoutCallback,
                     userdata: UnsafeMutableRawPointer?) -> OpaquePointer? {
        let t = LoopTimeout(poll: poll, callback: callback, userdata: userdata)
        t.timer = IOTimer { [weak t] in t?.fire() }
        t.arm(tv)
        return OpaquePointer(Unmanaged.passRetained(t).toOpaque())
    }

    static func from(_ p: OpaquePointer?) -> LoopTimeout? {
        p.map { Unmanaged<LoopTimeout>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }

    /// Fires once at `tv` (Avahi's absolute `gettimeofday` time); nil disarms.
    func arm(_ tv: UnsafePointer<timeval>?) {
        deadline = tv?.pointee
        timer?.schedule(afterNanoseconds: deadline.map(Self.nanosecondsUntil))
    }

    func free() {
        freed = true
        deadline = nil
        timer?.cancel()
        Unmanaged.passUnretained(self).release()
    }

    private static func nanosecondsUntil(_ tv: timeval) -> UInt64 {
        var now = timeval()
        gettimeofday(&now, nil)
        let micros = (Int64(tv.tv_sec) - Int64(now.tv_sec)) * 1_000_000 + Int64(tv.tv_usec) - Int64(now.tv_usec)
        return micros > 0 ? UInt64(micros) * 1000 : 0
    }

    private func fire() {
        poll.dispatch { [self] in
            // A timer that woke early (the monotonic clock ran ahead of the wall clock), or
            // one that was re-armed while its callback was queued, waits on.
            guard !freed, let due = deadline else { return }
            let left = Self.nanosecondsUntil(due)
            if left > 0 { timer?.schedule(afterNanoseconds: left); return }
            deadline = nil
            callback(OpaquePointer(Unmanaged.passUnretained(self).toOpaque()), userdata)
        }
    }
}
