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
                    let deadline = Runtime.seconds() + stagger
                    while Runtime.seconds() < deadline, race.waitingOnSome { try? await Runtime.sleep(nanoseconds: 10_000_000) }
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

        func set(_ c: CheckedContinuation<(SecureLink, TransportEndpoint)?, Never>) { lock.withLock { continuation = c } }
        var failures: [String] { lock.withLock { reasons } }
        /// Whether an attempt is still in flight and nobody won yet (the stagger wait goes on).
        var waitingOnSome: Bool { lock.withLock { !done && started > failed } }

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
            return c != nil
        }

        func failed(_ why: String) {
            let c = lock.withLock { () -> CheckedContinuation<(SecureLink, TransportEndpoint)?, Never>? in
                reasons.append(why)
                failed += 1
                return finishIfLost()
            }
            c?.resume(returning: nil)
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
