/// What happened during one run of a scenario, as observed from the sending node. Times are
/// milliseconds since the run started.
public struct RunRecord: Sendable, Codable, Equatable {
    public var scenario: String
    public var backend: String
    public var duration: Int
    public var links: [String]
    /// When each link was up (connected and part of the session).
    public var upSpans: [Span]
    /// Which link carried which role when (reliable, bulk, unreliable).
    public var carrierSpans: [Span]
    /// Scenario events as applied, and carrier changes with their reasons.
    public var events: [Mark]
    /// Per message traffic: the sequence numbers in arrival order and their arrival times.
    public var streams: [MessageStream]
    public var resources: [ResourceOutcome]
    /// Per `[[item]]` of a scenario of daemons: what became of it.
    public var items: [ItemOutcome] = []

    public struct Span: Sendable, Codable, Equatable {
        public var link: String
        public var role: String?
        public var from: Int
        public var to: Int
    }

    public struct Mark: Sendable, Codable, Equatable {
        public var at: Int
        public var kind: String
        public var text: String
    }

    public struct MessageStream: Sendable, Codable, Equatable {
        public var sent: Int
        public var failedSends: Int
        public var arrivals: [Int]
        public var arrivalTimes: [Int]
    }

    public struct ResourceOutcome: Sendable, Codable, Equatable {
        public var size: Int
        public var verified: Bool
        public var restarted: Bool
        public var error: String?
        public var finishedAt: Int?
    }

    /// One store-and-forward item: when its holder queued it, who received it when (and
    /// whether the landed file matched the placed one), when the holder settled or expired it.
    public struct ItemOutcome: Sendable, Codable, Equatable {
        public var name: String
        public var from: String
        public var to: String
        public var size: Int
        /// When the file was placed in the holder's outbox and when its daemon queued it (ms).
        public var placedAt: Int?
        public var queuedAt: Int?
        /// Every landing of the item in a daemon's inbox.
        public var receptions: [Reception] = []
        /// When the holder recorded the peer's receipt (delivered), expired or failed it.
        public var settledAt: Int?
        public var expiredAt: Int?
        public var failedAt: Int?
        /// Why it expired or failed, as the holder reported it.
        public var reason: String?
    }

    public struct Reception: Sendable, Codable, Equatable {
        public var node: String
        public var at: Int
        /// The landed file has the placed file's SHA-256.
        public var intact: Bool
    }

    /// The link carrying `role` at `time`, if any; among `links` only (one pair's, when a
    /// scenario has more than two nodes), when given.
    public func carrier(of role: String, at time: Int, among links: Set<String>? = nil) -> String? {
        carrierSpans.last { span in
            span.role == role && span.from <= time && time < max(span.to, span.from + 1) && (links?.contains(span.link) ?? true)
        }?.link
    }
}

/// Turns periodic samples of "which link carries what" into spans.
struct SpanBuilder {
    private var open: [String: (link: String, role: String?, from: Int)] = [:]
    private(set) var spans: [RunRecord.Span] = []

    /// Records that at `time` exactly the (link, role) pairs in `active` hold.
    mutating func sample(_ active: Set<Pair>, at time: Int) {
        for (key, s) in open where !active.contains(Pair(link: s.link, role: s.role)) {
            spans.append(RunRecord.Span(link: s.link, role: s.role, from: s.from, to: time))
            open[key] = nil
        }
        for p in active where open[p.key] == nil { open[p.key] = (p.link, p.role, time) }
    }

    mutating func close(at time: Int) -> [RunRecord.Span] {
        sample([], at: time)
        return spans.sorted { ($0.from, $0.link) < ($1.from, $1.link) }
    }

    struct Pair: Hashable {
        let link: String
        let role: String?
        var key: String { "\(link)/\(role ?? "")" }
    }
}
