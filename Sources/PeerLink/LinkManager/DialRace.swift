import Foundation

/// Dials a peer's paths happy-eyeballs style: the first at once, each next one when the
/// previous attempts all failed or after `stagger` seconds, whichever comes first; the first
/// authenticated link wins and later winners are closed. A path that swallows packets then
/// costs `stagger`, not its whole connect timeout (issue 14: 10.3 s for a 1 MiB send whose
/// first path dropped TCP, 0.3 s with it up).
enum DialRace {
    /// The winning link and its endpoint, or nil with every attempt's failure.
    static func first(_ endpoints: [TransportEndpoint], stagger: Double = 0.25,
                      dial: @escaping @Sendable (TransportEndpoint) async throws -> SecureLink) async -> (winner: (SecureLink, TransportEndpoint)?, failures: [String]) {
        let race = Race()
        let winner = await withCheckedContinuation { (c: CheckedContinuation<(SecureLink, TransportEndpoint)?, Never>) in
            race.set(c)
            Task {
                for ep in endpoints {
                    guard race.start() else { break }
                    Task {
                        do {
                            let link = try await dial(ep)
                            if !race.won(link, ep) { link.close() }
                        } catch {
                            race.failed("\(ep): \(error)")
                        }
                    }
                    await race.pause(stagger)
                }
                race.allStarted()
            }
        }
        return (winner, race.failures)
    }

    /// The shared state of one race.
    private final class Race: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<(SecureLink, TransportEndpoint)?, Never>?
        private var done = false
        private var started = 0
        private var failed = 0
        private var everyoneStarted = false
        private var reasons: [String] = []
        /// The wait between two starts (`pause`), ended early when nothing is in flight.
        private var pausing: CheckedContinuation<Void, Never>?

        func set(_ c: CheckedContinuation<(SecureLink, TransportEndpoint)?, Never>) { lock.withLock { continuation = c } }
        var failures: [String] { lock.withLock { reasons } }
        /// Waits `seconds`, or less: until every attempt in flight failed or one won.
        func pause(_ seconds: Double) async {
            let timer = Task.detached { [self] in
                try? await Runtime.sleep(seconds: seconds)
                endPause()
            }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now: Bool = lock.withLock {
                    guard !done, started > failed else { return true }
                    pausing = c
                    return false
                }
                if now { c.resume() }
            }
            timer.cancel()
        }

        private func endPause() { lock.withLock { () -> CheckedContinuation<Void, Never>? in defer { pausing = nil }; return pausing }?.resume() }

        /// Counts a new attempt; false once the race is decided.
        func start() -> Bool { lock.withLock { if done { return false }; started += 1; return true } }

        func won(_ link: SecureLink, _ ep: TransportEndpoint) -> Bool {
            let c: CheckedContinuation<(SecureLink, TransportEndpoint)?, Never>? = lock.withLock {
                if done { return nil }
                done = true
                defer { continuation = nil }
                return continuation
            }
            c?.resume(returning: (link, ep))
            endPause()
            return c != nil
        }

        func failed(_ why: String) {
            let (c, idle) = lock.withLock { () -> (CheckedContinuation<(SecureLink, TransportEndpoint)?, Never>?, Bool) in
                reasons.append(why)
                failed += 1
                return (finishIfLost(), failed == started)
            }
            c?.resume(returning: nil)
            if idle { endPause() }
        }

        func allStarted() {
            let c = lock.withLock { () -> CheckedContinuation<(SecureLink, TransportEndpoint)?, Never>? in
                everyoneStarted = true
                return finishIfLost()
            }
            c?.resume(returning: nil)
        }

        /// Under the lock: every attempt started and failed.
        private func finishIfLost() -> CheckedContinuation<(SecureLink, TransportEndpoint)?, Never>? {
            guard !done, everyoneStarted, failed == started else { return nil }
            done = true
            defer { continuation = nil }
            return continuation
        }
    }
}
