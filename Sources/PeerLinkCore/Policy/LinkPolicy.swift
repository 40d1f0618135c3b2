/// What a link is used for.
public enum LinkRole: String, Sendable, CaseIterable, Codable {
    /// Keepalives, acknowledgements, invitations: small and urgent.
    case control
    /// Reliable application messages.
    case reliable
    /// Resources and streams: large transfers.
    case bulk
    /// Unreliable messages.
    case unreliable
}

/// The kind of radio under a link, as far as policy cares.
public enum LinkClass: String, Sendable, Codable {
    case bluetooth, ip, other
}

/// What the policy knows about one link. All fields are measurements or facts; nothing here
/// is a decision.
package struct LinkMetrics: Sendable, Equatable {
    package var id: LinkID
    package var linkClass: LinkClass
    /// Milliseconds since the link came up.
    package var age: UInt64
    /// Last measured round-trip time, if any.
    package var rttMillis: UInt64?
    /// Fraction of probes or packets lost recently (0…1).
    package var loss: Double
    /// Estimated bytes per second, if measured.
    package var throughput: Double?
    /// The largest frame the remote accepts on this link (its hello), if known: small frames
    /// cost more per byte (each carries a tag and headers).
    package var maxFrame: Int?
    /// True for a link the peers negotiated for bulk (a Wi-Fi Direct group): it takes bulk as
    /// soon as it is up, without proving itself for the dwell time first.
    package var negotiated: Bool

    package init(id: LinkID, linkClass: LinkClass, age: UInt64 = 0, rttMillis: UInt64? = nil, loss: Double = 0,
                throughput: Double? = nil, maxFrame: Int? = nil, negotiated: Bool = false) {
        self.id = id; self.linkClass = linkClass; self.age = age; self.rttMillis = rttMillis; self.loss = loss
        self.throughput = throughput; self.maxFrame = maxFrame; self.negotiated = negotiated
    }
}

/// Which link carries each role, and why.
package struct LinkChoice: Sendable, Equatable {
    package var carrier: [LinkRole: LinkID] = [:]
    package var reason: [LinkRole: CarrierReason] = [:]
    /// The link that also gets a copy of each reliable message (`LinkPolicy.copyMessages`).
    package var messageCopy: LinkID?
    package var messageCopyReason: CarrierReason?
    /// Bytes per second the copies may take on that link.
    package var messageCopyRate: Double?
    package init() {}
}

/// A pure function from link state to link choice; see docs/LINK-POLICY.md for the rules.
public struct LinkPolicy: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable, Codable {
        case bluetoothFirst = "bluetooth-first", wifiFirst = "wifi-first", lowestLatency = "lowest-latency"
        case bluetoothOnly = "bluetooth-only", ipOnly = "ip-only"
    }

    public var kind: Kind
    /// A link losing more than this is used only when nothing better is up.
    public var lossLimit = 0.2
    /// A carrier is kept unless the new best link has been up this long (no flapping).
    public var dwell: Duration = .seconds(3)
    /// …and is at least this much better by the role's measure (0.25 = 25 %)…
    public var margin = 0.25
    /// …and, where the measure is the round trip, at least this much faster: round trips are
    /// whole milliseconds, and between two links of one LAN 0 against 1 ms is noise, not a
    /// 100 % gain (two such links swapped the carrier at every probe).
    public var rttMargin: Duration = .milliseconds(5)
    /// Classes of link the user would rather not use (metered, or costly in power on a
    /// battery device): used for a role only when no other allowed link is usable.
    public var avoid: Set<LinkClass> = []
    /// Also send reliable messages (and control records) on the next best link while one is
    /// up, within `copyShare` of that link's throughput: a carrier that fails silently then
    /// delays nothing, at the cost of sending messages twice. Never onto an avoided or lossy link.
    public var copyMessages = false
    /// Share of the copy link's estimated throughput the copies may take.
    public var copyShare = 0.25
    /// The copy budget on any link, at least (bytes per second).
    public static let minimumCopyRate = 32.0 * 1024
    /// Bytes each frame costs beyond its payload on the wire (AEAD tag, length prefix,
    /// frame and record headers): bulk speed is weighed by `maxFrame / (maxFrame + this)`.
    public static let frameOverhead = 40

    public init(_ kind: Kind = .bluetoothFirst) { self.kind = kind }

    package var dwellMillis: UInt64 { dwell.wholeMilliseconds }
    package var marginMillis: UInt64 { rttMargin.wholeMilliseconds }

    /// Chooses a carrier per role among `links` (the live ones), keeping `previous` carriers
    /// that are still fine (hysteresis).
    package func choose(_ links: [LinkMetrics], previous: LinkChoice = LinkChoice()) -> LinkChoice {
        var out = LinkChoice()
        let allowed = links.filter { admits($0.linkClass) }
        guard !allowed.isEmpty else {
            let why = CarrierReason(links.isEmpty ? .noLiveLink : .notAllowed(policy: kind, live: links.map(\.linkClass)))
            for role in LinkRole.allCases { out.reason[role] = why }
            return out
        }
        for role in LinkRole.allCases {
            let ranked = rank(allowed, for: role)
            guard let best = ranked.first else { continue }
            if let prev = previous.carrier[role], prev != best.link.id,
               let kept = ranked.first(where: { $0.link.id == prev }), !kept.demoted,
               !clearlyBetter(best, than: kept, for: role) {
                out.carrier[role] = prev
                var why = kept.why
                why.kept = CarrierReason.Hysteresis(dwell: dwell, margin: margin)
                out.reason[role] = why
            } else {
                out.carrier[role] = best.link.id
                out.reason[role] = best.why
            }
        }
        if copyMessages, let second = rank(allowed, for: .reliable).first(where: {
            $0.link.id != out.carrier[.reliable] && !$0.demoted && !avoid.contains($0.link.linkClass) }) {
            let rate = max(Self.minimumCopyRate, copyShare * speed(of: second.link))
            out.messageCopy = second.link.id
            out.messageCopyRate = rate
            out.messageCopyReason = CarrierReason(.messageCopy(bytesPerSecond: rate, next: second.why.rule))
        }
        return out
    }

    private func admits(_ c: LinkClass) -> Bool {
        switch kind {
        case .bluetoothOnly: return c == .bluetooth
        case .ipOnly: return c == .ip || c == .other
        default: return true
        }
    }

    struct Ranked {
        let link: LinkMetrics
        let demoted: Bool
        let tier: Int          // lower is preferred
        let measure: Double    // lower is better within a tier
        let measureIsRTT: Bool // the measure is the round trip in milliseconds
        let why: CarrierReason
    }

    private func rank(_ links: [LinkMetrics], for role: LinkRole) -> [Ranked] {
        links.map { l in
            let demoted = l.loss > lossLimit
            let rtt = Double(l.rttMillis ?? 10_000)
            let speed = speed(of: l)
            var tier: Int
            var measure: Double
            var why: CarrierReason
            switch (kind, role) {
            case (.lowestLatency, _):
                tier = 0; measure = rtt; why = CarrierReason(.lowestRoundTrip(rtt: l.rttMillis.map { .milliseconds(clamping: $0) }))
            case (.bluetoothFirst, .bulk), (.wifiFirst, .bulk), (.bluetoothOnly, .bulk), (.ipOnly, .bulk):
                // A link negotiated for bulk (Wi-Fi Direct) carries it while it is up and well:
                // an idle link's throughput is not measured, so speeds would not compare.
                tier = l.negotiated ? 0 : 1; measure = 1 / speed
                why = CarrierReason(l.negotiated ? .negotiatedForBulk(bytesPerSecond: speed, frame: l.maxFrame)
                                                 : .fastestForBulk(bytesPerSecond: speed, frame: l.maxFrame))
            case (.bluetoothFirst, _):
                tier = l.linkClass == .bluetooth ? 0 : 1; measure = rtt
                why = CarrierReason(l.linkClass == .bluetooth ? .bluetoothFirst : .fallbackNoBluetooth)
            case (.wifiFirst, _):
                tier = l.linkClass == .bluetooth ? 1 : 0; measure = rtt
                why = CarrierReason(l.linkClass == .bluetooth ? .fallbackNoIP : .wifiFirst)
            case (.bluetoothOnly, _), (.ipOnly, _):
                tier = 0; measure = rtt; why = CarrierReason(.onlyClass(kind == .bluetoothOnly ? .bluetooth : .ip))
            }
            if avoid.contains(l.linkClass) {
                tier += 5
                why.avoided = l.linkClass
            }
            if demoted {
                // Among links that all lose too much, the least lossy one carries, whatever
                // the preference: a preferred link that loses everything is no fallback.
                tier = 10 + (avoid.contains(l.linkClass) ? 5 : 0)
                measure = l.loss
                why.lossy = CarrierReason.Loss(loss: l.loss, limit: lossLimit)
            }
            let byRTT = !demoted && !(role == .bulk && kind != .lowestLatency)
            return Ranked(link: l, demoted: demoted, tier: tier, measure: measure, measureIsRTT: byRTT, why: why)
        }
        .sorted { ($0.tier, $0.measure, $0.link.id) < ($1.tier, $1.measure, $1.link.id) }
    }

    /// A link's throughput for payload (measured, or assumed for its class until measured),
    /// weighed by its frame size.
    private func speed(of l: LinkMetrics) -> Double {
        let raw = l.throughput ?? (l.linkClass == .ip ? 10_000_000 : l.linkClass == .bluetooth ? 100_000 : 1_000_000)
        let frame = Double(l.maxFrame ?? 65519)
        return raw * frame / (frame + Double(Self.frameOverhead))
    }

    /// Whether `best` should replace the current carrier `kept`.
    private func clearlyBetter(_ best: Ranked, than kept: Ranked, for role: LinkRole) -> Bool {
        guard best.link.age >= dwellMillis || (role == .bulk && best.link.negotiated) else { return false }
        if best.tier < kept.tier { return true }
        if best.tier > kept.tier { return false }
        if best.measureIsRTT && kept.measureIsRTT && kept.measure - best.measure < Double(marginMillis) { return false }
        return best.measure < kept.measure * (1 - margin)
    }
}
