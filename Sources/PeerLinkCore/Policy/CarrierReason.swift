/// Why a link carries a role (or why no link does): the rule of the `LinkPolicy` that chose
/// it and what qualified the choice. Switch on `rule` to act on it; `description` is the
/// sentence `peerlink links` prints.
public struct CarrierReason: Sendable, Hashable, CustomStringConvertible {
    /// The rule that chose the link.
    public indirect enum Rule: Sendable, Hashable {
        /// `bluetooth-first`: a Bluetooth link carries messages and control.
        case bluetoothFirst
        /// `bluetooth-first` with no usable Bluetooth link: another link stands in.
        case fallbackNoBluetooth
        /// `wifi-first`: a Wi-Fi or other IP link carries messages and control.
        case wifiFirst
        /// `wifi-first` with no usable Wi-Fi/IP link: Bluetooth stands in.
        case fallbackNoIP
        /// `lowest-latency`: the shortest round trip (nil: not measured yet).
        case lowestRoundTrip(rtt: Duration?)
        /// The fastest link for bulk, with the speed it is credited with (bytes per second,
        /// weighed by its frame size) and the largest frame the peer accepts on it.
        case fastestForBulk(bytesPerSecond: Double, frame: Int?)
        /// A link the peers negotiated for bulk (Wi-Fi Direct), with its speed and frame size.
        case negotiatedForBulk(bytesPerSecond: Double, frame: Int?)
        /// `bluetooth-only` or `ip-only`: the only class of link allowed.
        case onlyClass(LinkClass)
        /// No link is up.
        case noLiveLink
        /// Links are up but `policy` allows none of them (`live`: their classes).
        case notAllowed(policy: LinkPolicy.Kind, live: [LinkClass])
        /// The policy has not chosen yet: the oldest live link carries.
        case oldestLiveLink
        /// The chosen carrier `link` has acknowledged nothing for `silence` with data in
        /// flight, so the traffic moved to `movedTo` until it answers.
        case carrierSuspected(link: LinkID, silence: Duration, movedTo: LinkID)
        /// A copy of each reliable message (`LinkPolicy.copyMessages`) within `bytesPerSecond`,
        /// on the link `next` would choose after the carrier.
        case messageCopy(bytesPerSecond: Double, next: Rule)
        /// A reason this build cannot name, as its text (e.g. read back from JSON).
        case other(String)
    }

    /// A link losing more than the policy's limit, used only as a last resort.
    public struct Loss: Sendable, Hashable {
        /// Fraction of probes or packets the link lost recently (0…1).
        public var loss: Double
        /// The policy's `lossLimit`.
        public var limit: Double
        /// A lossy link's figures.
        public init(loss: Double, limit: Double) { self.loss = loss; self.limit = limit }
    }

    /// A carrier kept although another link ranks first (no flapping): the better link must be
    /// up `dwell` and `margin` better to take over.
    public struct Hysteresis: Sendable, Hashable {
        /// The policy's `dwell`.
        public var dwell: Duration
        /// The policy's `margin` (0.25 = 25 %).
        public var margin: Double
        /// The policy's hysteresis figures.
        public init(dwell: Duration, margin: Double) { self.dwell = dwell; self.margin = margin }
    }

    /// The rule that chose the link.
    public var rule: Rule
    /// The link's class, when the policy avoids it (`LinkPolicy.avoid`): chosen only because
    /// nothing else was up.
    public var avoided: LinkClass?
    /// Set when the link loses more than the policy allows: the least lossy such link carries.
    public var lossy: Loss?
    /// Set when the carrier was kept by hysteresis.
    public var kept: Hysteresis?

    /// A reason from its rule and qualifiers.
    public init(_ rule: Rule, avoided: LinkClass? = nil, lossy: Loss? = nil, kept: Hysteresis? = nil) {
        self.rule = rule; self.avoided = avoided; self.lossy = lossy; self.kept = kept
    }

    /// The reason in words, as `peerlink links` and the daemon's API show it.
    public var description: String {
        var s = rule.description
        if let avoided { s += "; \(avoided.rawValue) is avoided, used only when nothing else is up" }
        if let lossy { s += "; loss \(Int(lossy.loss * 100))% above \(Int(lossy.limit * 100))%, last resort (the least lossy goes first)" }
        if let kept {
            s = "kept: \(s) (hysteresis: the better link must be up \(kept.dwell.wholeMilliseconds) ms and \(Int(kept.margin * 100))% better)"
        }
        return s
    }
}

extension CarrierReason.Rule: CustomStringConvertible {
    /// The rule in words.
    public var description: String {
        switch self {
        case .bluetoothFirst: return "Bluetooth first"
        case .fallbackNoBluetooth: return "fallback: no usable Bluetooth link"
        case .wifiFirst: return "Wi-Fi first"
        case .fallbackNoIP: return "fallback: no usable Wi-Fi/IP link"
        case let .lowestRoundTrip(rtt): return "lowest round-trip time (\(rtt.map { "\($0.wholeMilliseconds) ms" } ?? "not measured"))"
        case let .fastestForBulk(speed, frame): return "fastest link for bulk (\(Self.speed(speed, frame)))"
        case let .negotiatedForBulk(speed, frame): return "negotiated for bulk (\(Self.speed(speed, frame)))"
        case let .onlyClass(c): return "only \(c == .bluetooth ? "Bluetooth" : "IP") links allowed"
        case .noLiveLink: return "no live link"
        case let .notAllowed(policy, live): return "no link allowed by \(policy.rawValue) (live: \(live.map(\.rawValue).joined(separator: ", ")))"
        case .oldestLiveLink: return "oldest live link"
        case let .carrierSuspected(link, silence, movedTo):
            return "link \(link): nothing acknowledged or answered for \(silence.wholeMilliseconds) ms with data in flight; moved to link \(movedTo) until it answers"
        case let .messageCopy(rate, next):
            return "copy of reliable messages (copy-messages on, up to \(Int(rate / 1000)) kB/s): next link for messages, \(next)"
        case let .other(text): return text
        }
    }

    private static func speed(_ bytesPerSecond: Double, _ frame: Int?) -> String {
        "\(Int(bytesPerSecond / 1000)) kB/s\(frame.map { " in frames of \($0) bytes" } ?? "")"
    }
}

extension CarrierReason: Codable {
    /// Reads a reason from its text (the JSON of `peerlink links` and the daemon's API carry
    /// reasons as text): the rule is `.other` with that text.
    public init(from decoder: any Decoder) throws {
        self.init(.other(try decoder.singleValueContainer().decode(String.self)))
    }

    /// Writes the reason as its text.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}
