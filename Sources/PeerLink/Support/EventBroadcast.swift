import Synchronization

/// A sequence of events that several readers each read in full: a session's events, so that
/// an app's UI and its logger can both iterate `Session.events`.
///
/// Each reader (`subscribe()`) gets every event pushed from the moment it subscribed, in order.
/// The first reader, when nobody else is reading, also gets what arrived while nobody was: events
/// are never dropped for want of a reader, they wait for one. An event is let go once every
/// reader has taken it. `unread` is what the slowest reader has not taken yet (or, with no
/// reader, what is waiting for one): the session pauses acknowledgements on it.
///
/// Made with `keepWithoutReader`, at most that many events (the newest) wait for a first
/// reader; 0 keeps none, for sequences whose readers start from a snapshot instead. After
/// `finish()` readers take what is left and then end.
final class EventBroadcast<Element: Sendable>: Sendable {
    private struct Reader {
        var cursor: UInt64
        var waiter: CheckedContinuation<Element?, Never>?
    }
    private struct State {
        /// Events from sequence number `base` on.
        var items: [Element] = []
        var head = 0
        var base: UInt64 = 0
        var readers: [UInt64: Reader] = [:]
        var lastReader: UInt64 = 0
        var finished = false
        var end: UInt64 { base + UInt64(items.count - head) }
    }
    private let state = Mutex(State())
    private let keepWithoutReader: Int?

    /// - Parameter keepWithoutReader: how many events (the newest) wait for a first reader;
    ///   nil: all of them.
    init(keepWithoutReader: Int? = nil) { self.keepWithoutReader = keepWithoutReader }

    /// Events the slowest reader has not taken (with no reader: events waiting for one).
    var unread: Int {
        state.withLock { s in
            guard let slowest = s.readers.values.map(\.cursor).min() else { return s.items.count - s.head }
            return Int(s.end - slowest)
        }
    }

    /// Readers subscribed now.
    var readerCount: Int { state.withLock { $0.readers.count } }

    /// Adds `element` for every reader and wakes those waiting.
    func push(_ element: Element) {
        let keep = keepWithoutReader
        let woken: [CheckedContinuation<Element?, Never>] = state.withLock { s in
            guard !s.finished else { return [] }
            s.items.append(element)
            var woken: [CheckedContinuation<Element?, Never>] = []
            for (id, r) in s.readers {
                guard let w = r.waiter else { continue }
                // A waiting reader has taken everything before: this event is its next.
                s.readers[id] = Reader(cursor: r.cursor + 1, waiter: nil)
                woken.append(w)
            }
            Self.trim(&s, keep: keep)
            return woken
        }
        for w in woken { w.resume(returning: element) }
    }

    /// Ends the sequence: nothing pushed later is kept, and readers end once they have taken
    /// what was pushed before.
    func finish() {
        let waiting: [CheckedContinuation<Element?, Never>] = state.withLock { s in
            s.finished = true
            var waiting: [CheckedContinuation<Element?, Never>] = []
            for (id, r) in s.readers {
                guard let w = r.waiter else { continue }
                s.readers[id]?.waiter = nil
                waiting.append(w)
            }
            return waiting
        }
        for w in waiting { w.resume(returning: nil) }
    }

    /// A new reader: it starts at the oldest event kept when nobody else reads (with
    /// `fromEnd`, or when others read, at the next event pushed).
    func subscribe(fromEnd: Bool = false) -> UInt64 {
        state.withLock { s in
            s.lastReader += 1
            let start = s.readers.isEmpty && !fromEnd ? s.base : s.end
            s.readers[s.lastReader] = Reader(cursor: start, waiter: nil)
            return s.lastReader
        }
    }

    /// The reader is gone: events only it held are let go; a waiting call returns nil.
    func unsubscribe(_ id: UInt64) {
        let keep = keepWithoutReader
        let waiter: CheckedContinuation<Element?, Never>? = state.withLock { s in
            let gone = s.readers.removeValue(forKey: id)
            Self.trim(&s, keep: keep)
            return gone?.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Reader `id`'s next event; nil if the calling task is cancelled while it waits (or the
    /// reader was unsubscribed).
    func next(_ id: UInt64) async -> Element? {
        if let e = state.withLock({ Self.take(id, &$0) }) { return e }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Element?, Never>) in
                let now: Element?? = state.withLock { s in
                    guard s.readers[id] != nil else { return .some(nil) }
                    if let e = Self.take(id, &s) { return .some(e) }
                    if Task.isCancelled || s.finished { return .some(nil) }
                    s.readers[id]?.waiter = c
                    return nil
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            let waiter: CheckedContinuation<Element?, Never>? = state.withLock { s in
                defer { s.readers[id]?.waiter = nil }
                return s.readers[id]?.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    private static func take(_ id: UInt64, _ s: inout State) -> Element? {
        guard let r = s.readers[id], r.cursor < s.end else { return nil }
        let e = s.items[s.head + Int(r.cursor - s.base)]
        s.readers[id]?.cursor = r.cursor + 1
        trim(&s)
        return e
    }

    /// Lets go of what every reader has taken and, while nobody reads, of all but the newest
    /// `keep` events (nil: keeps them all).
    private static func trim(_ s: inout State, keep: Int?) {
        if s.readers.isEmpty, let keep, s.items.count - s.head > keep {
            let drop = s.items.count - s.head - keep
            s.head += drop
            s.base += UInt64(drop)
            compact(&s)
        }
        trim(&s)
    }

    /// Lets go of what every reader has taken; keeps everything while nobody reads.
    private static func trim(_ s: inout State) {
        guard let slowest = s.readers.values.map(\.cursor).min(), slowest > s.base else { return }
        s.head += Int(slowest - s.base)
        s.base = slowest
        compact(&s)
    }

    /// Gives back the room of events let go (all of it, or once it is half the array).
    private static func compact(_ s: inout State) {
        if s.head == s.items.count {
            s.items.removeAll(keepingCapacity: s.items.capacity <= 1024)
            s.head = 0
        } else if s.head >= 1024, s.head * 2 >= s.items.count {
            s.items.removeFirst(s.head)
            s.head = 0
        }
    }
}

/// One iteration's subscription to an `EventBroadcast`; dropping it lets its unread events go.
final class BroadcastReader<Element: Sendable>: Sendable {
    let queue: EventBroadcast<Element>
    let id: UInt64
    init(_ queue: EventBroadcast<Element>, fromEnd: Bool = false) {
        self.queue = queue
        id = queue.subscribe(fromEnd: fromEnd)
    }
    deinit { queue.unsubscribe(id) }
    /// The next event; nil once the broadcast finished and everything was taken, or when the
    /// reading task is cancelled.
    func next() async -> Element? { await queue.next(id) }
}
