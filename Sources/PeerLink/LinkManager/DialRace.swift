import Foundation
import Synchronization

/// Dials a peer's paths happy-eyeballs style: the first at once, each next one when the
/// previous attempts all failed or after `stagger` seconds, whichever comes first; the first
/// authenticated link wins and later winners are closed. A path that swallows packets then
/// costs `stagger`, not its whole connect timeout (issue 14: 10.3 s for a 1 MiB send whose
/// first path dropped TCP, 0.3 s with it up).
enum DialRace {
    /// The winning link and its endpoint, or nil with every attempt's failure.
    static func first(_ endpoints: [TransportEndpoint], stagger: Double = 0.25,
                      dial: @escaping @Sendable (TransportEndpoint) async throws -> SecureLink) async -> (winner: (SecureLink, TransportEndpoint)?, failures: [DialFailure]) {
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
                            race.failed(DialFailure(endpoint: ep, error: error))
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
    private final class Race: Sendable {
        typealias Winner = CheckedContinuation<(SecureLink, TransportEndpoint)?, Never>
        private struct State {
            var continuation: Winner?
            var done = false
            var started = 0
            var failed = 0
            var everyoneStarted = false
            var reasons: [DialFailure] = []
            /// The wait between two starts (`pause`), ended early when nothing is in flight.
            var pausing: CheckedContinuation<Void, Never>?
        }
        private let state = Mutex(State())

        func set(_ c: Winner) { state.withLock { $0.continuation = c } }
        var failures: [DialFailure] { state.withLock { $0.reasons } }

        /// Waits `seconds`, or less: until every attempt in flight failed or one won.
        func pause(_ seconds: Double) async {
            let timer = Task.detached { [self] in
                try? await Runtime.sleep(seconds: seconds)
                endPause()
            }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now: Bool = state.withLock { s in
                    guard !s.done, s.started > s.failed else { return true }
                    s.pausing = c
                    return false
                }
                if now { c.resume() }
            }
            timer.cancel()
        }

        private func endPause() { state.withLock { s in defer { s.pausing = nil }; return s.pausing }?.resume() }

        /// Counts a new attempt; false once the race is decided.
        func start() -> Bool { state.withLock { s in if s.done { return false }; s.started += 1; return true } }

        func won(_ link: SecureLink, _ ep: TransportEndpoint) -> Bool {
            let c: Winner? = state.withLock { s in
                if s.done { return nil }
                s.done = true
                defer { s.continuation = nil }
                return s.continuation
            }
            c?.resume(returning: (link, ep))
            endPause()
            return c != nil
        }

        func failed(_ why: DialFailure) {
            let (c, idle) = state.withLock { s -> (Winner?, Bool) in
                s.reasons.append(why)
                s.failed += 1
                return (Self.finishIfLost(&s), s.failed == s.started)
            }
            c?.resume(returning: nil)
            if idle { endPause() }
        }

        func allStarted() {
            let c: Winner? = state.withLock { s in
                s.everyoneStarted = true
                return Self.finishIfLost(&s)
            }
            c?.resume(returning: nil)
        }

        /// Under the lock: every attempt started and failed.
        private static func finishIfLost(_ s: inout State) -> Winner? {
            guard !s.done, s.everyoneStarted, s.failed == s.started else { return nil }
            s.done = true
            defer { s.continuation = nil }
            return s.continuation
        }
    }
}
