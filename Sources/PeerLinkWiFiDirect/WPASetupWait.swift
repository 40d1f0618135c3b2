import Foundation
import PeerLink

extension WPASignalHub {
    /// Starts feeding every signal to `watch` (register it before the call that starts the
    /// set-up). Call `wait` (which also ends the subscription) or `cancel`.
    func watch(_ watch: WiFiSetupWatch) -> WPASetupWait {
        let w = WPASetupWait(hub: self, watch: watch)
        w.id = subscribe { [weak w] sig in w?.feed(sig) }
        return w
    }
}

/// A set-up being watched: blocks a dedicated thread (never a Swift concurrency one) until
/// `WiFiSetupWatch` reaches a verdict or time runs out.
final class WPASetupWait: @unchecked Sendable {
    private let hub: WPASignalHub
    private let lock = NSLock()
    private let semaphore = DispatchSemaphore(value: 0)
    private var state: WiFiSetupWatch
    fileprivate var id = 0

    fileprivate init(hub: WPASignalHub, watch: WiFiSetupWatch) {
        self.hub = hub
        state = watch
    }

    fileprivate func feed(_ s: WPASignal) {
        let first: Bool = lock.withLock {
            guard state.verdict == nil else { return false }
            return state.handle(s) != nil
        }
        if first { semaphore.signal() }
    }

    /// The verdict (nil after `seconds` without one) and the watch as it ended.
    func wait(seconds: Double) -> (verdict: WiFiSetupWatch.Verdict?, watch: WiFiSetupWatch) {
        defer { cancel() }
        _ = semaphore.wait(timeout: .now() + seconds)
        return lock.withLock { (state.verdict, state) }
    }

    func cancel() { hub.unsubscribe(id) }
}
