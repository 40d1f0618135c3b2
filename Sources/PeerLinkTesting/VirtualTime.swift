import PeerLink

/// Runs PeerLink nodes in virtual time, on one thread, the same way every time: for tests
/// of code built on PeerLink that must not wait for the clock or depend on the machine's
/// speed.
///
/// Inside ``run(seed:limit:_:)`` every task the body starts runs on the calling thread, one
/// job at a time; PeerLink's timers (keepalives, dial retries, invitation timeouts) wait in
/// virtual time, and when nothing can run the clock jumps to the next deadline. Links of the
/// in-memory medium (`MemoryTransport`) carry traffic with the delays and losses they are
/// given; sockets, radios and daemons are outside the run and make it nondeterministic (or
/// stall it). Set `SWIFT_DETERMINISTIC_HASHING=1` in the environment for dictionaries to
/// iterate in the same order in every run.
///
/// Outside a run, ``now``, ``sleep(for:)`` and ``random()`` use the system's monotonic clock
/// and random numbers, so code that reads them works in both.
public enum VirtualTime {
    /// Why a run ended before its body returned.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// Nothing could run and no timer was set, yet the body had not returned: a task
        /// waits for something outside the run (a socket, another thread).
        case stalled(at: Duration)
        /// Virtual time passed the run's limit.
        case overran(limit: Duration)
        /// Another run is in progress in this process (one at a time).
        case busy

        public var description: String {
            switch self {
            case let .stalled(at):
                return "the run stalled at \(at / .seconds(1)) s of virtual time: no task could run and none was waiting "
                    + "for a time (a task waits for something outside the run)"
            case let .overran(limit): return "the run passed its limit of \(limit / .seconds(1)) s of virtual time"
            case .busy: return "another virtual-time run is in progress in this process"
            }
        }
    }

    /// Runs `body`, and every task it starts, on this thread in virtual time, and returns
    /// its result; blocks the calling thread until then.
    /// - Parameters:
    ///   - seed: where ``random()`` and PeerLink's own random choices (keys, loss) start: the
    ///     same seed gives the same run.
    ///   - limit: the virtual time the run may take before it fails with ``Failure/overran(limit:)``.
    /// - Throws: what `body` throws, or a ``Failure``.
    public static func run<T: Sendable>(seed: UInt64, limit: Duration = .seconds(3600),
                                        _ body: @escaping @Sendable () async throws -> T) throws -> T {
        do {
            return try Simulation(seed: seed).run(limit: limit, body)
        } catch let failure as Simulation.Failure {
            switch failure {
            case let .stalled(at): throw Failure.stalled(at: .nanoseconds(Int64(clamping: at)))
            case let .overran(limit): throw Failure.overran(limit: .nanoseconds(Int64(clamping: limit)))
            case .busy: throw Failure.busy
            }
        }
    }

    /// Whether the caller runs inside ``run(seed:limit:_:)`` (on its thread).
    public static var isRunning: Bool { Runtime.simulation != nil }

    /// The time on PeerLink's clock: virtual time since the run started inside a run, the
    /// system's monotonic clock (since boot) outside.
    public static var now: Duration { .nanoseconds(Int64(clamping: Runtime.nanoseconds())) }

    /// Waits `duration` on PeerLink's clock (negative counts as zero).
    /// - Throws: `CancellationError` when the task is cancelled first.
    public static func sleep(for duration: Duration) async throws {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return try await Runtime.sleep(nanoseconds: 0) }
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        try await Runtime.sleep(nanoseconds: nanoseconds.overflow ? .max : UInt64(nanoseconds.partialValue) + UInt64(attoseconds / 1_000_000_000))
    }

    /// A random 64-bit number: the next of the run's seeded sequence inside a run, the
    /// system's random numbers outside.
    public static func random() -> UInt64 { Runtime.random() }

    /// `count` random bytes from ``random()``.
    public static func randomBytes(_ count: Int) -> [UInt8] { Runtime.randomBytes(count) }
}
