import Synchronization

/// How many connections a server serves at once, and whether it still takes new ones: what
/// the API's Unix socket server and the metrics endpoint share.
final class ConnectionGate: Sendable {
    private let state = Mutex<(open: Int, stopped: Bool)>((0, false))
    /// Connections served at once; one more is answered busy.
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// Lets a new connection in (counted until `release`), unless the server stopped or is full.
    func admit() -> Bool {
        state.withLock { s in
            guard !s.stopped, s.open < capacity else { return false }
            s.open += 1
            return true
        }
    }

    /// Counts a served connection out.
    func release() { state.withLock { $0.open -= 1 } }

    /// Takes no new connection from now on; true the first time only.
    func stop() -> Bool { state.withLock { s in defer { s.stopped = true }; return !s.stopped } }

    /// Connections being served now.
    var open: Int { state.withLock { $0.open } }
}
