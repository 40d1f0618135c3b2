import Foundation
import PeerLink
import PeerLinkDBus

/// A signal from wpa_supplicant (or the bus's `NameOwnerChanged` about it).
struct WPASignal: Sendable, Equatable {
    var path: String
    var interface: String
    var member: String
    var args: [DBusValue]

    /// wpa_supplicant left the bus (stopped or crashed).
    var isSupplicantGone: Bool { supplicantPresence == false }

    /// For the bus's `NameOwnerChanged` about wpa_supplicant: whether it is on the bus now
    /// (false: it left; true: it came (back)); nil for any other signal.
    var supplicantPresence: Bool? {
        guard member == "NameOwnerChanged", args.count == 3, case let .string(name) = args[0], name == WPASupplicantBus.service,
              case let .string(newOwner) = args[2] else { return nil }
        return !newOwner.isEmpty
    }
}

/// Hands each signal to every subscriber; `expect` catches the first match of a predicate
/// registered before the action that causes it. Subscribers run on the bus's dispatch
/// thread and must not block.
final class WPASignalHub: @unchecked Sendable {
    typealias Subscriber = @Sendable (WPASignal) -> Void
    private let lock = NSLock()
    private var subscribers: [Int: Subscriber] = [:]
    private var nextID = 0

    func subscribe(_ s: @escaping Subscriber) -> Int {
        lock.withLock {
            nextID += 1
            subscribers[nextID] = s
            return nextID
        }
    }

    func unsubscribe(_ id: Int) { _ = lock.withLock { subscribers.removeValue(forKey: id) } }

    func deliver(_ signal: WPASignal) {
        let all = lock.withLock { Array(subscribers.values) }
        for s in all { s(signal) }
    }

    /// Starts catching the first signal `match` accepts. Call `wait` (which also ends the
    /// subscription) or `cancel`.
    func expect(_ match: @escaping @Sendable (WPASignal) -> Bool) -> WPAExpectation {
        let e = WPAExpectation(hub: self)
        e.id = subscribe { [weak e] sig in
            guard let e, match(sig) else { return }
            e.fulfil(sig)
        }
        return e
    }
}

/// One pending `expect`: blocks a dedicated thread (never a Swift concurrency one) until the
/// signal arrives or time runs out.
final class WPAExpectation: @unchecked Sendable {
    private let hub: WPASignalHub
    private let lock = NSLock()
    private let semaphore = DispatchSemaphore(value: 0)
    private var caught: WPASignal?
    fileprivate var id = 0

    fileprivate init(hub: WPASignalHub) { self.hub = hub }

    fileprivate func fulfil(_ s: WPASignal) {
        let first: Bool = lock.withLock {
            guard caught == nil else { return false }
            caught = s
            return true
        }
        if first { semaphore.signal() }
    }

    /// The signal, or nil after `seconds`.
    func wait(seconds: Double) -> WPASignal? {
        defer { cancel() }
        _ = semaphore.wait(timeout: .now() + seconds)
        return lock.withLock { caught }
    }

    func cancel() { hub.unsubscribe(id) }
}
