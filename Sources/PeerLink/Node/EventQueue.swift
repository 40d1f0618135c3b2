import Foundation

/// A session's events on their way from the channels that emit them to the tasks that read
/// them: in order, each event read once, unbounded (the session bounds it by pausing its
/// acknowledgements while readers are behind). A reader finding it empty waits for the next
/// event, or reads nil when its task is cancelled, as it did from the `AsyncStream` this
/// replaces: that stream's generic storage looked type metadata up on every event, about
/// 5 % of a stream of small messages (docs/PERFORMANCE.md). Several readers are served in
/// the order they started waiting.
final class EventQueue: @unchecked Sendable {
    private typealias Waiter = (id: UInt64, continuation: CheckedContinuation<Session.Event?, Never>)

    private let lock = NSLock()
    private var items: [Session.Event] = []
    private var head = 0
    private var waiters: [Waiter] = []
    private var lastWaiter: UInt64 = 0

    /// Events emitted and not read yet.
    var count: Int { lock.withLock { items.count - head } }

    /// Hands `event` to the longest-waiting reader, or keeps it for the next one.
    func push(_ event: Session.Event) {
        let reader: CheckedContinuation<Session.Event?, Never>? = lock.withLock {
            guard !waiters.isEmpty else { items.append(event); return nil }
            return waiters.removeFirst().continuation
        }
        reader?.resume(returning: event)
    }

    /// The next event; nil only when the calling task is cancelled while waiting (or before).
    func next() async -> Session.Event? {
        let (ready, id): (Session.Event?, UInt64) = lock.withLock {
            if let e = popLocked() { return (e, 0) }
            lastWaiter += 1
            return (nil, lastWaiter)
        }
        if let ready { return ready }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Session.Event?, Never>) in
                let now: Session.Event?? = lock.withLock {
                    if let e = popLocked() { return .some(e) }
                    if Task.isCancelled { return .some(nil) }  // the cancel handler found nobody to wake
                    waiters.append((id, c))
                    return .none
                }
                if case let .some(e) = now { c.resume(returning: e) }
            }
        } onCancel: {
            let reader: CheckedContinuation<Session.Event?, Never>? = lock.withLock {
                guard let i = waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return waiters.remove(at: i).continuation
            }
            reader?.resume(returning: nil)
        }
    }

    private func popLocked() -> Session.Event? {
        guard head < items.count else { return nil }
        let e = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.capacity <= 1024)
            head = 0
        } else if head >= 1024, head * 2 >= items.count {
            items.removeFirst(head)  // keep the read part from growing without bound
            head = 0
        }
        return e
    }
}
