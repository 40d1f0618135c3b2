import Synchronization

/// PeerLink's one queue between a producer and the tasks that wait for what it produces: a
/// stream's incoming bytes (`StreamBuffer`); a session's events, which several readers each
/// read in full, are an `EventBroadcast`. In order, each element taken once, unbounded (its
/// user bounds it: a stream grants credit only for what was read). Several readers are
/// served in the order they started waiting. A reader whose task is cancelled while it waits
/// gets nil and takes nothing. Once finished, readers drain what is left, then get nil, or the
/// error the queue was finished with.
///
/// Written against `Mutex` and checked continuations once, here, instead of a lock and a
/// continuation per type (it replaced three such hand-rolled queues).
final class WaitQueue<Element: Sendable, Failure: Error>: Sendable {
    private struct State {
        var items: [Element] = []
        var head = 0
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Result<Element?, Failure>, Never>)] = []
        var lastWaiter: UInt64 = 0
        /// Set once by `finish`: nil inside for a clean end.
        var end: Result<Void, Failure>?
    }
    private let state = Mutex(State())

    init() {}

    /// Elements queued and not taken yet.
    var count: Int { state.withLock { $0.items.count - $0.head } }

    /// Hands `element` to the longest-waiting reader, or keeps it for the next one. Ignored
    /// once the queue is finished.
    func push(_ element: Element) {
        let reader: CheckedContinuation<Result<Element?, Failure>, Never>? = state.withLock { s in
            guard s.end == nil else { return nil }
            guard !s.waiters.isEmpty else { s.items.append(element); return nil }
            return s.waiters.removeFirst().continuation
        }
        reader?.resume(returning: .success(element))
    }

    /// Ends the queue: waiting readers get nil (or `error`); later readers drain what is left first.
    func finish(_ error: Failure? = nil) {
        let readers: [CheckedContinuation<Result<Element?, Failure>, Never>] = state.withLock { s in
            guard s.end == nil else { return [] }
            s.end = error.map { .failure($0) } ?? .success(())
            defer { s.waiters.removeAll() }
            return s.waiters.map(\.continuation)
        }
        for r in readers { r.resume(returning: error.map { .failure($0) } ?? .success(nil)) }
    }

    /// The next element; nil at the end (or when the calling task is cancelled while waiting).
    func next() async throws(Failure) -> Element? {
        let ready: Ready = state.withLock { s in
            if let e = Self.pop(&s) { return .value(e) }
            if let end = s.end { return .ended(end) }
            s.lastWaiter += 1
            return .wait(s.lastWaiter)
        }
        let id: UInt64
        switch ready {
        case let .value(e): return e
        case let .ended(end): try end.get(); return nil
        case let .wait(w): id = w
        }
        let result: Result<Element?, Failure> = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Result<Element?, Failure>, Never>) in
                let now: Result<Element?, Failure>? = state.withLock { s in
                    if let e = Self.pop(&s) { return .success(e) }
                    if let end = s.end { return end.map { nil } }
                    if Task.isCancelled { return .success(nil) }  // the cancel handler found nobody to wake
                    s.waiters.append((id, c))
                    return nil
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            let reader: CheckedContinuation<Result<Element?, Failure>, Never>? = state.withLock { s in
                guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: i).continuation
            }
            reader?.resume(returning: .success(nil))
        }
        return try result.get()
    }

    private enum Ready { case value(Element), ended(Result<Void, Failure>), wait(UInt64) }

    private static func pop(_ s: inout State) -> Element? {
        guard s.head < s.items.count else { return nil }
        let e = s.items[s.head]
        s.head += 1
        if s.head == s.items.count {
            s.items.removeAll(keepingCapacity: s.items.capacity <= 1024)
            s.head = 0
        } else if s.head >= 1024, s.head * 2 >= s.items.count {
            s.items.removeFirst(s.head)  // keep the read part from growing without bound
            s.head = 0
        }
        return e
    }
}

/// An incoming stream's bytes, read by the application.
typealias StreamBuffer = WaitQueue<[UInt8], PeerLinkError>
