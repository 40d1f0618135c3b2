import Foundation
import PeerLink
import Synchronization

/// One thing the daemon did that a client of its API may follow: an item queued, delivered,
/// expired or failed, an item or file received, a peer connected or gone, an unknown peer
/// waiting for the owner's answer and that answer.
public struct DaemonEvent: Sendable, Equatable, Codable {
    /// What happened (the SSE `event:` field of `GET /v1/events`).
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case itemQueued = "item.queued"
        case itemDelivered = "item.delivered"
        case itemExpired = "item.expired"
        case itemFailed = "item.failed"
        case itemReceived = "item.received"
        case fileReceived = "file.received"
        case messageReceived = "message.received"
        case peerConnected = "peer.connected"
        case peerLeft = "peer.left"
        /// An unknown peer asked for a session and waits in the pending list.
        case peerPending = "peer.pending"
        /// The owner accepted a pending peer (`reason` says whether it is now trusted).
        case peerAccepted = "peer.accepted"
        /// The owner declined a pending peer.
        case peerDeclined = "peer.declined"
        /// The browser found a peer of the service (in range now; `peerlink browse`).
        case peerFound = "peer.found"
        /// The browser lost a peer (out of range, or its advert withdrawn).
        case peerLost = "peer.lost"
    }

    /// Increases by one per event. The first event of a daemon run takes the run's start
    /// time in microseconds since 1970 as its ID, so IDs of an earlier run are lower than any
    /// of this run's (the ring answers "gone" for them, see `DaemonEvents.after`).
    public let id: UInt64
    public let kind: Kind
    /// Milliseconds since 1970 (wall clock) when it was published.
    public let time: Int64
    public var peer: String?
    public var name: String?
    public var item: String?
    public var path: String?
    public var size: UInt64?
    public var reason: String?

    public init(id: UInt64, kind: Kind, time: Int64, peer: String? = nil, name: String? = nil, item: String? = nil,
                path: String? = nil, size: UInt64? = nil, reason: String? = nil) {
        self.id = id; self.kind = kind; self.time = time; self.peer = peer; self.name = name
        self.item = item; self.path = path; self.size = size; self.reason = reason
    }
}

/// The daemon's recent events: a bounded ring (oldest dropped first) that readers follow by
/// the last ID they saw, waiting for the next ones. Publishing never blocks on a reader.
public final class DaemonEvents: Sendable {
    /// Events a reader asked for are no longer held: it missed some. `oldest` is the lowest
    /// ID still held (or the next ID to come when none is held).
    public struct Gone: Error, Equatable, Sendable {
        public let oldest: UInt64
    }

    private struct Waiter {
        let after: UInt64
        let continuation: CheckedContinuation<Result<[DaemonEvent], Gone>, Never>
    }

    private struct State {
        var ring: [DaemonEvent] = []
        /// Index in `ring` of the oldest event once the ring is full.
        var head = 0
        var nextID: UInt64
        let capacity: Int
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        /// Waits whose timeout or cancellation came before they were registered.
        var ended: Set<UInt64> = []

        /// The ring's index of its oldest event.
        var base: Int { ring.count == capacity ? head : 0 }
        var oldestID: UInt64 { ring.isEmpty ? nextID : ring[base].id }

        /// Events with an ID above `after`, oldest first, or `Gone` when some of them were dropped.
        func after(_ after: UInt64) -> Result<[DaemonEvent], Gone> {
            let oldest = oldestID
            if after + 1 < oldest { return .failure(Gone(oldest: oldest)) }
            guard after + 1 < nextID else { return .success([]) }
            // IDs are consecutive: the event with ID x sits (x - oldest) after the head.
            let start = Int(after + 1 - oldest), count = ring.count, base = self.base
            return .success((start..<count).map { ring[(base + $0) % count] })
        }
    }

    /// Most events held.
    public let capacity: Int
    private let state: Mutex<State>

    /// - Parameters:
    ///   - capacity: most events held (at least 1).
    ///   - firstID: the ID of the first event (default: now in microseconds since 1970).
    public init(capacity: Int = 10_000, firstID: UInt64? = nil, clock: @escaping @Sendable () -> Int64 = DaemonEvents.wallClockMilliseconds) {
        self.capacity = max(1, capacity)
        self.clock = clock
        state = Mutex(State(nextID: max(1, firstID ?? UInt64(max(1, clock())) * 1000), capacity: max(1, capacity)))
    }

    private let clock: @Sendable () -> Int64
    /// Called with every event as it is published (the metrics' counters), in order.
    private let observers = Mutex<[@Sendable (DaemonEvent) -> Void]>([])

    /// Calls `observer` with every event published from now on, on the publisher's thread and
    /// outside the ring's lock: it must be quick and must not publish.
    public func observe(_ observer: @escaping @Sendable (DaemonEvent) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    public static func wallClockMilliseconds() -> Int64 {
        Int64((Runtime.wallClock() * 1000).rounded(.down))
    }

    /// The ID the next event will take; `after = nextID - 1` follows only what comes next.
    public var nextID: UInt64 { state.withLock { $0.nextID } }

    /// The lowest ID still held (the next ID when none is).
    public var oldestID: UInt64 { state.withLock { $0.oldestID } }

    /// Adds an event (filled with the next ID and the time) and wakes the readers waiting.
    @discardableResult
    public func publish(_ kind: DaemonEvent.Kind, peer: String? = nil, name: String? = nil, item: String? = nil,
                        path: String? = nil, size: UInt64? = nil, reason: String? = nil) -> DaemonEvent {
        let time = clock()
        let (event, woken): (DaemonEvent, [(Waiter, Result<[DaemonEvent], Gone>)]) = state.withLock { s in
            let e = DaemonEvent(id: s.nextID, kind: kind, time: time, peer: peer, name: name, item: item, path: path, size: size, reason: reason)
            s.nextID += 1
            if s.ring.count < capacity {
                s.ring.append(e)
            } else {
                s.ring[s.head] = e
                s.head = (s.head + 1) % capacity
            }
            let waiters = s.waiters.values.map { ($0, s.after($0.after)) }
            s.waiters.removeAll()
            return (e, waiters)
        }
        for (w, result) in woken { w.continuation.resume(returning: result) }
        for observer in observers.withLock({ $0 }) { observer(event) }
        return event
    }

    /// The held events with an ID above `after`, oldest first; `Gone` when events above
    /// `after` were already dropped (or `after` is from an earlier run of the daemon).
    public func after(_ after: UInt64) -> Result<[DaemonEvent], Gone> {
        state.withLock { $0.after(after) }
    }

    /// Like `after(_:)`, but when nothing newer is held, waits up to `timeout` for the next
    /// event (an empty list when none came, or when the task is cancelled).
    public func wait(after: UInt64, timeout: Duration) async -> Result<[DaemonEvent], Gone> {
        let now = self.after(after)
        if case let .success(list) = now, list.isEmpty {} else { return now }
        let token = state.withLock { s -> UInt64 in s.nextWaiter += 1; return s.nextWaiter }
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.cancelWait(token)
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Result<[DaemonEvent], Gone>, Never>) in
                let ready: Result<[DaemonEvent], Gone>? = state.withLock { s in
                    let r = s.after(after)
                    if case let .success(list) = r, list.isEmpty, !Task.isCancelled, s.ended.remove(token) == nil {
                        s.waiters[token] = Waiter(after: after, continuation: c)
                        return nil
                    }
                    return r
                }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            self.cancelWait(token)
        }
        timer.cancel()
        await timer.value
        state.withLock { _ = $0.ended.remove(token) }
        return result
    }

    /// Ends one wait with an empty list, if it still waits.
    private func cancelWait(_ token: UInt64) {
        let w = state.withLock { s -> Waiter? in
            guard let w = s.waiters.removeValue(forKey: token) else {
                s.ended.insert(token)
                return nil
            }
            return w
        }
        w?.continuation.resume(returning: .success([]))
    }

    /// Readers waiting now (for tests).
    var waiting: Int { state.withLock { $0.waiters.count } }
}
