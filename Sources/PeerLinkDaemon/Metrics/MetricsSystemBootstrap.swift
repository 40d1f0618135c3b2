import Metrics
import Prometheus
import Synchronization

/// swift-metrics' global factory, set once per process (`MetricsSystem.bootstrap` may only be
/// called once: a second call would stop the process).
enum MetricsSystemBootstrap {
    private static let done = Mutex(false)

    /// Routes swift-metrics' API into `registry`; later calls change nothing.
    static func run(_ registry: PrometheusCollectorRegistry) {
        let first = done.withLock { d -> Bool in defer { d = true }; return !d }
        guard first else { return }
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    }
}
