import Foundation
import PeerLink
import PeerLinkStore
import Prometheus
import Synchronization

/// One daemon's metrics (docs/METRICS.md): counters moved as things happen, gauges set from a
/// `MetricsSnapshot` at each scrape, written in the Prometheus text format by `exposition`.
///
/// Each daemon has its own `PrometheusCollectorRegistry` (two daemons in one test process do
/// not mix); `bootstrapSwiftMetrics()` also routes swift-metrics' global API into it, for
/// libraries that record through swift-metrics.
///
/// Label values that come from outside are bounded: at most `maxPeers` distinct peers get a
/// series of their own (later ones share `peer="other"`), and medium names from a peer's
/// upgrade proposals are cut to 32 characters, at most `maxMedia` distinct.
public final class DaemonMetrics: Sendable {
    /// What `peerlink_errors_total{kind}` counts.
    public enum ErrorKind: String, Sendable, CaseIterable {
        /// A ledger call failed (SQLite, a file move it makes).
        case ledger
        /// A store-and-forward stream ended with an error or could not be written.
        case stream
        /// An outbox file could not be queued or read.
        case outbox
        /// A received item could not be moved into the inbox.
        case inbox
        /// The `on_receive` command could not run or failed.
        case onReceive = "on_receive"
    }

    public let registry: PrometheusCollectorRegistry
    public static let maxPeers = 256
    public static let maxMedia = 16
    /// Most distinct peers `peerlink_peers_seen` counts (a bound on the memory it takes).
    public static let maxSeen = 4096
    /// Seconds since 1970 and `systemUptime` when the metrics were made (the daemon's start).
    let startedWall: Double
    let startedUptime: Double

    private struct Labels {
        var peers: Set<String> = []
        var media: Set<String> = []
        /// Every peer that had a session.
        var seen: Set<String> = []
        /// Label sets of the scrape-time gauges already set, to zero those that are gone.
        var linkMedia: Set<String> = []
        var pending: Set<[String]> = []
        /// What `peerlink_wire_bytes_total` was moved to, per direction and medium label.
        var wire: [[String]: UInt64] = [:]
        /// Each connected peer's carrier link per role ("peer role"), so that the first carrier
        /// of a session is not counted as a handover.
        var carriers: [String: UInt64] = [:]
    }
    private let labels = Mutex(Labels())

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), version: String = DaemonMetrics.version) {
        self.registry = registry
        startedWall = Date().timeIntervalSince1970
        startedUptime = ProcessInfo.processInfo.systemUptime
        gauge(MetricsCatalogue.buildInfo, [version, Self.arch, Self.os]).set(Int64(1))
        gauge(MetricsCatalogue.startTime).set(startedWall)
        gauge(MetricsCatalogue.uptime).set(Int64(0))
        for e in [MetricsCatalogue.peersConnected, MetricsCatalogue.peersFound, MetricsCatalogue.peersSeen] { gauge(e).set(Int64(0)) }
        counter(MetricsCatalogue.sessions).increment(by: Int64(0))
        for kind in ErrorKind.allCases { counter(MetricsCatalogue.errors, [kind.rawValue]).increment(by: Int64(0)) }
        for d in ["sent", "received"] { counter(MetricsCatalogue.itemBytes, [d]).increment(by: Int64(0)) }
    }

    /// The daemon's version for `peerlink_build_info`: PeerLink's release, unless a packager
    /// overrides it with PEERLINK_VERSION at run time (a distribution's own version string).
    public static var version: String { ProcessInfo.processInfo.environment["PEERLINK_VERSION"] ?? PeerLinkRelease.version }

    /// Routes swift-metrics' global API (`Counter(label:)`, …) into this registry. Once per
    /// process (swift-metrics' rule): the CLI's daemon calls it; tests do not.
    public func bootstrapSwiftMetrics() {
        MetricsSystemBootstrap.run(registry)
    }

    // MARK: recording

    /// Counts an event the daemon published (items, files, peers).
    public func record(_ e: DaemonEvent) {
        let peer = e.peer.map(peerLabel) ?? "unknown"
        switch e.kind {
        case .itemQueued: counter(MetricsCatalogue.itemsQueued, [peer]).increment()
        case .itemDelivered:
            counter(MetricsCatalogue.itemsDelivered, [peer]).increment()
            bytes("sent", e.size)
        case .itemExpired: counter(MetricsCatalogue.itemsExpired, [peer]).increment()
        case .itemFailed: counter(MetricsCatalogue.itemsFailed, [peer]).increment()
        case .itemReceived, .messageReceived:
            counter(MetricsCatalogue.itemsReceived, [peer]).increment()
            bytes("received", e.size)
        case .fileReceived:
            counter(MetricsCatalogue.filesReceived, [peer]).increment()
            bytes("received", e.size)
        case .peerConnected:
            counter(MetricsCatalogue.sessions).increment()
            if let p = e.peer {
                let seen = labels.withLock { l -> Int in
                    if l.seen.count < Self.maxSeen { l.seen.insert(p) }
                    return l.seen.count
                }
                gauge(MetricsCatalogue.peersSeen).set(Int64(seen))
            }
        case .peerLeft, .peerPending, .peerAccepted, .peerDeclined, .peerFound, .peerLost: break
        }
    }

    /// Counts a session event: links up and down, handovers (a role's carrier changing within a
    /// session; the first carrier of each role is not one), upgrade steps.
    public func observe(_ e: Session.Event) {
        switch e {
        case let .linkChanged(_, _, medium, up, _):
            counter(MetricsCatalogue.linkChanges, [mediumLabel(medium.description), up ? "up" : "down"]).increment()
        case let .carrierChanged(peer, link, role, _):
            let moved = labels.withLock { l -> Bool in
                l.carriers.updateValue(link, forKey: "\(peer) \(role.rawValue)") != nil
            }
            if moved { counter(MetricsCatalogue.handovers, [role.rawValue]).increment() }
        case let .peerStateChanged(peer, _, state) where state == .notConnected:
            let prefix = "\(peer) "
            labels.withLock { l in l.carriers = l.carriers.filter { !$0.key.hasPrefix(prefix) } }
        case let .linkUpgrade(_, step):
            counter(MetricsCatalogue.upgrades, [mediumLabel(step.medium), step.step.rawValue]).increment()
        default:
            break
        }
    }

    /// Counts one error of `kind`.
    public func error(_ kind: ErrorKind) {
        counter(MetricsCatalogue.errors, [kind.rawValue]).increment()
    }

    /// Sets the scrape-time gauges; series of earlier snapshots that are gone now read 0.
    public func update(_ s: MetricsSnapshot) {
        gauge(MetricsCatalogue.uptime).set(ProcessInfo.processInfo.systemUptime - startedUptime)
        gauge(MetricsCatalogue.peersConnected).set(Int64(s.peersConnected))
        gauge(MetricsCatalogue.peersFound).set(Int64(s.peersFound))
        var links: [String: Int] = [:]
        for (medium, n) in s.linksUp { links[mediumLabel(medium), default: 0] += n }
        var pending: [[String]: Int] = [:]
        for c in s.pending { pending[[peerLabel(c.peer.description), c.state.rawValue], default: 0] += c.count }
        let (oldMedia, oldPending) = labels.withLock { l -> (Set<String>, Set<[String]>) in
            defer { l.linkMedia.formUnion(links.keys); l.pending.formUnion(pending.keys) }
            return (l.linkMedia, l.pending)
        }
        for m in oldMedia.union(links.keys) { gauge(MetricsCatalogue.linksUp, [m]).set(Int64(links[m] ?? 0)) }
        for k in oldPending.union(pending.keys) { gauge(MetricsCatalogue.itemsPending, k).set(Int64(pending[k] ?? 0)) }
        wire(s.wireBytes)
    }

    /// Moves `peerlink_wire_bytes_total` up to the session's totals: by what each grew since
    /// the last scrape, never down.
    private func wire(_ totals: [String: WireBytes]) {
        var now: [[String]: UInt64] = [:]
        for (medium, b) in totals {
            let m = mediumLabel(medium)
            now[["sent", m], default: 0] &+= b.sent
            now[["received", m], default: 0] &+= b.received
        }
        let steps = labels.withLock { l -> [[String]: UInt64] in
            var steps: [[String]: UInt64] = [:]
            for (k, v) in now where v > l.wire[k] ?? 0 {
                steps[k] = v - (l.wire[k] ?? 0)
                l.wire[k] = v
            }
            return steps
        }
        for (k, step) in steps { counter(MetricsCatalogue.wireBytes, k).increment(by: Int64(clamping: step)) }
    }

    /// The text exposition (format 0.0.4) of everything registered.
    public func exposition() -> [UInt8] {
        var out: [UInt8] = []
        registry.emit(into: &out)
        return out
    }

    // MARK: helpers

    private func bytes(_ direction: String, _ size: UInt64?) {
        guard let size, size > 0 else { return }
        counter(MetricsCatalogue.itemBytes, [direction]).increment(by: Int64(clamping: size))
    }

    /// `peer`, or "other" once `maxPeers` distinct peers have series.
    func peerLabel(_ peer: String) -> String {
        labels.withLock { l in
            if l.peers.contains(peer) { return peer }
            guard l.peers.count < Self.maxPeers else { return "other" }
            l.peers.insert(peer)
            return peer
        }
    }

    /// A medium's name, at most 32 characters, or "other" once `maxMedia` distinct ones were seen.
    func mediumLabel(_ medium: String) -> String {
        let m = String(medium.prefix(32))
        return labels.withLock { l in
            if l.media.contains(m) { return m }
            guard l.media.count < Self.maxMedia else { return "other" }
            l.media.insert(m)
            return m
        }
    }

    private func counter(_ e: MetricsCatalogue.Entry, _ values: [String] = []) -> Counter {
        registry.makeCounter(descriptor: Self.descriptor(e), labels: Array(zip(e.labels, values)))
    }

    private func gauge(_ e: MetricsCatalogue.Entry, _ values: [String] = []) -> Gauge {
        registry.makeGauge(descriptor: Self.descriptor(e), labels: Array(zip(e.labels, values)))
    }

    private static func descriptor(_ e: MetricsCatalogue.Entry) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: e.name, unitName: "", helpText: e.help)
    }

    static var arch: String {
        #if arch(x86_64)
        return "x86_64"
        #elseif arch(arm64)
        return "arm64"
        #else
        return "other"
        #endif
    }

    static var os: String {
        #if os(Linux)
        return "linux"
        #elseif os(macOS)
        return "macos"
        #else
        return "other"
        #endif
    }
}
