import Logging
import Synchronization

/// The daemon's metrics endpoint as the CLI runs it: a `MetricsHTTPServer` at the configured
/// address serving `FieldDaemon.metricsText()`.
///
/// A bind that fails (the port taken, the address not there yet at boot) does not stop the
/// daemon: delivering items matters more than being watched, and a scraper sees the target
/// down either way. The failure is logged as an error once, and the bind is tried again every
/// `retry` until it works (an address that appears once the network is up is then served).
public final class MetricsEndpoint: Sendable {
    public let address: MetricsAddress
    /// Between two tries to bind.
    public let retry: Duration
    private let state = Mutex<(server: MetricsHTTPServer?, stopped: Bool)>((nil, false))
    private let retryTask = Mutex<Task<Void, Never>?>(nil)

    /// Starts serving at `address` now, or keeps trying every `retry`.
    public init(address: MetricsAddress, log: Logger, retry: Duration = .seconds(30), handler: @escaping MetricsHTTPServer.Handler) {
        self.address = address
        self.retry = retry
        if bind(log: log, handler: handler, failures: 0) { return }
        let task = Task { [self] in
            var failures = 1
            while !Task.isCancelled {
                guard (try? await Task.sleep(for: retry)) != nil else { return }
                if bind(log: log, handler: handler, failures: failures) { return }
                failures += 1
            }
        }
        retryTask.withLock { $0 = task }
    }

    /// The server once it listens (nil while the bind keeps failing).
    public var server: MetricsHTTPServer? { state.withLock { $0.server } }

    /// Stops serving and trying.
    public func stop() {
        retryTask.withLock { $0?.cancel() }
        let server = state.withLock { s -> MetricsHTTPServer? in s.stopped = true; return s.server }
        server?.stop()
    }

    /// One try: true when it listens (or was stopped meanwhile).
    private func bind(log: Logger, handler: @escaping MetricsHTTPServer.Handler, failures: Int) -> Bool {
        do {
            let server = try MetricsHTTPServer(address: address, handler: handler)
            let kept = state.withLock { s -> Bool in
                guard !s.stopped else { return false }
                s.server = server
                return true
            }
            guard kept else { server.stop(); return true }
            server.start()
            log.info("metrics listening", metadata: ["address": "\(server.address)", "path": "/metrics",
                                                     "tries": "\(failures + 1)"])
            return true
        } catch {
            if failures == 0 {
                log.error("metrics not served: \(error); the daemon runs on and tries again every \(retry.components.seconds) s",
                          metadata: ["address": "\(address)"])
            } else {
                log.debug("metrics: bind failed again", metadata: ["address": "\(address)", "error": "\(error)"])
            }
            return state.withLock { $0.stopped }
        }
    }
}
