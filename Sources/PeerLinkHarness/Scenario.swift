import PeerLink
import PeerLinkTOML

/// A transport-selection scenario: nodes (two unless it names more), the links between pairs
/// of them, a timeline of events and traffic, and what must hold. See docs/HARNESS.md for the
/// file format.
public struct Scenario: Sendable, Codable, Equatable {
    public var name: String
    public var description: String
    /// The nodes; the first two are the default ends of every link and every traffic.
    public var nodes: [String] = Scenario.defaultNodes
    public static let defaultNodes = ["sender", "receiver"]
    public var policy: LinkPreference
    /// Whether reliable messages are also copied onto a second link (`LinkPolicy.copyMessages`).
    public var copyMessages = false
    /// Milliseconds the run lasts (traffic that has not arrived by then counts as lost).
    public var duration: Int
    public var links: [LinkSpec]
    public var events: [TimedEvent]
    public var traffic: [Traffic]
    public var expectations: [CarrierExpectation]
    public var invariants: Invariants
    /// The nodes that run a field daemon (`[[node]] daemon = true`): all of them, or none.
    public var daemons: [DaemonSpec] = []
    /// Store-and-forward items placed in daemons' outboxes on the timeline (`[[item]]`).
    public var items: [Item] = []

    /// One radio path between the two nodes.
    public struct LinkSpec: Sendable, Codable, Equatable {
        public enum Kind: String, Sendable, Codable {
            case bluetooth, wifi
            /// A Wi-Fi Direct group the nodes negotiate inside their session when bulk starts
            /// (LINK_SETUP): never dialled from discovery, present only while set up.
            case wifiDirect = "wifi-direct"
        }
        public var name: String
        public var kind: Kind
        /// Bytes per second each way (0 = unlimited).
        public var bandwidth: Int
        /// One-way delay in milliseconds.
        public var delay: Int
        /// Probability (0…1) that a message needs a retransmission (reliable links delay, never lose).
        public var loss: Double
        /// When the link becomes discoverable (ms); 0 = from the start.
        public var upAt: Int
        /// The two nodes it joins: the first dials, the second listens.
        public var between: [String] = Scenario.defaultNodes
    }

    /// Something that happens to a link at a time.
    public struct TimedEvent: Sendable, Codable, Equatable {
        public enum Action: String, Sendable, Codable {
            /// Silent blackhole: nothing more arrives, nobody is told; unreachable until restored.
            case cut
            /// The radio is switched off: connections close; unreachable until restored.
            case off
            /// Reachable again (cut/off undone).
            case restore
            /// Set the link's loss probability (a loss burst starts or ends).
            case loss
        }
        public var at: Int
        public var action: Action
        public var link: String
        public var loss: Double?
    }

    /// Traffic from the first node to the second.
    public struct Traffic: Sendable, Codable, Equatable {
        public enum Kind: String, Sendable, Codable { case messages, resource }
        public var kind: Kind
        public var start: Int
        /// Messages: how many, of what size, at what rate (per second; 0 = as fast as flow control allows).
        public var count: Int
        public var size: Int
        public var rate: Int
        /// Who sends it, and to whom.
        public var from: String = Scenario.defaultNodes[0]
        public var to: String = Scenario.defaultNodes[1]
    }

    /// Which link must carry a role at a time.
    public struct CarrierExpectation: Sendable, Codable, Equatable {
        public var at: Int
        public var role: LinkRole
        public var link: String
        /// Tolerates a passing detour (ms): another carrier at `at` still passes when the role
        /// is back on `link` this much later. For checks about the policy's choice, not about
        /// a fast-failover move while the link stalls (PROTOCOL §11.5). nil: none.
        public var settle: Int? = nil
    }

    /// Properties of the whole run.
    public struct Invariants: Sendable, Codable, Equatable {
        /// Every reliable message delivered exactly once, in order.
        public var exactlyOnceInOrder: Bool
        /// The largest gap between deliveries while messages were being sent, at most (ms).
        public var maxGap: Int?
        /// Every resource arrived and passed the SHA-256 check.
        public var resourcesVerified: Bool
    }
}

extension Scenario {
    /// The link policy the scenario's nodes use.
    public var linkPolicy: LinkPolicy {
        var p = LinkPolicy(policy)
        p.copyMessages = copyMessages
        return p
    }
}

/// A scenario file that cannot be used, with the reason.
public struct ScenarioError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

extension Scenario {
    /// Reads a scenario from TOML text; every problem is reported with what to fix.
    public static func parse(_ text: String, defaultName: String = "scenario") throws -> Scenario {
        do {
            return try read(TOMLFields(TOMLDocument(parsing: text), unknownKeyHint: "see docs/HARNESS.md"), defaultName: defaultName)
        } catch let e as TOMLError {
            throw ScenarioError(message: "\(e)")
        } catch let e as TOMLFieldError {
            throw ScenarioError(message: "\(e)")
        }
    }

    static func read(_ fields: TOMLFields, defaultName: String) throws -> Scenario {
        var r = fields
        let name = try r.string("name") ?? defaultName
        let description = try r.string("description") ?? ""
        let policyText = try r.string("policy") ?? LinkPolicy.Kind.bluetoothFirst.rawValue
        guard let policy = LinkPolicy.Kind(rawValue: policyText) else {
            throw ScenarioError(message: "policy '\(policyText)' is not known; use one of: " + LinkPolicy.Kind.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let copyMessages = try r.bool("copy_messages") ?? false
        let duration = try r.int("duration", min: 100, max: 600_000) ?? 5000
        let nodeTables = try r.tables("node")
        let listed = try r.strings("nodes")
        var nodes = listed ?? Scenario.defaultNodes
        var daemons: [DaemonSpec] = []
        if !nodeTables.isEmpty {
            guard listed == nil else { throw ScenarioError(message: "name the nodes either with nodes = [...] or with [[node]] tables, not both") }
            (nodes, daemons) = try readNodes(nodeTables)
        }
        guard nodes.count >= 2, Set(nodes).count == nodes.count, !nodes.contains(where: \.isEmpty) else {
            throw ScenarioError(message: "nodes must name two or more different nodes, got \(nodes)")
        }
        func pair(_ t: inout TOMLFields, _ key: String) throws -> [String] {
            guard let p = try t.strings(key) else { return Array(nodes.prefix(2)) }
            guard p.count == 2, p[0] != p[1], p.allSatisfy(nodes.contains) else {
                throw ScenarioError(message: "\(t.path).\(key) must name two different nodes of \(nodes), got \(p)")
            }
            return p
        }

        var links: [LinkSpec] = []
        for var t in try r.tables("link") {
            let name = try t.requiredString("name")
            let kindText = try t.requiredString("medium")
            guard let kind = LinkSpec.Kind(rawValue: kindText) else {
                throw ScenarioError(message: "\(t.path).medium '\(kindText)' is not known; use bluetooth, wifi or wifi-direct")
            }
            guard !links.contains(where: { $0.name == name }) else { throw ScenarioError(message: "link '\(name)' is defined twice") }
            let between = try pair(&t, "between")
            if let other = links.first(where: { Set($0.between) == Set(between) && $0.between != between }) {
                throw ScenarioError(message: "\(t.path).between: links of one pair dial the same way; link '\(other.name)' has \(other.between)")
            }
            links.append(LinkSpec(name: name, kind: kind, bandwidth: try t.int("bandwidth", min: 0, max: 10_000_000_000) ?? 0,
                                  delay: try t.int("delay", min: 0, max: 10_000) ?? 0, loss: try t.double("loss", min: 0, max: 0.9) ?? 0,
                                  upAt: try t.int("up_at", min: 0, max: duration) ?? 0, between: between))
            try t.noOtherKeys()
        }
        guard !links.isEmpty else { throw ScenarioError(message: "a scenario needs at least one [[link]]") }
        if nodes.count == 2, daemons.isEmpty {
            guard links.contains(where: { $0.upAt == 0 && $0.kind != .wifiDirect }) else {
                throw ScenarioError(message: "at least one bluetooth or wifi link must be up at 0 (up_at = 0)")
            }
        } else if links.contains(where: { $0.kind == .wifiDirect }) {
            throw ScenarioError(message: "wifi-direct links need a scenario of two nodes")
        }
        if let l = links.first(where: { $0.kind == .wifiDirect && $0.upAt != 0 }) {
            throw ScenarioError(message: "link '\(l.name)': a wifi-direct link appears when the nodes negotiate it; up_at does not apply")
        }
        guard links.filter({ $0.kind == .wifiDirect }).count <= 1 else { throw ScenarioError(message: "at most one wifi-direct link") }

        func linkName(_ t: inout TOMLFields) throws -> String {
            let l = try t.requiredString("link")
            guard links.contains(where: { $0.name == l }) else {
                throw ScenarioError(message: "\(t.path).link '\(l)' is not a [[link]] of this scenario (links: \(links.map(\.name).joined(separator: ", ")))")
            }
            return l
        }

        var events: [TimedEvent] = []
        for var t in try r.tables("event") {
            let at = try t.requiredInt("at", min: 0, max: duration)
            let actionText = try t.requiredString("action")
            guard let action = TimedEvent.Action(rawValue: actionText) else {
                throw ScenarioError(message: "\(t.path).action '\(actionText)' is not known; use cut, off, restore or loss")
            }
            let link = try linkName(&t)
            let loss = try t.double("loss", min: 0, max: 0.9)
            if action == .loss, loss == nil { throw ScenarioError(message: "\(t.path): action 'loss' needs loss = 0…0.9") }
            events.append(TimedEvent(at: at, action: action, link: link, loss: loss))
            try t.noOtherKeys()
        }
        events.sort { $0.at < $1.at }

        var traffic: [Traffic] = []
        for var t in try r.tables("traffic") {
            let kindText = try t.requiredString("kind")
            guard let kind = Traffic.Kind(rawValue: kindText) else {
                throw ScenarioError(message: "\(t.path).kind '\(kindText)' is not known; use messages or resource")
            }
            let start = try t.int("start", min: 0, max: duration) ?? 0
            let from = try t.string("from") ?? nodes[0], to = try t.string("to") ?? nodes[1]
            guard nodes.contains(from), nodes.contains(to), from != to else {
                throw ScenarioError(message: "\(t.path): from and to must be two different nodes of \(nodes), got \(from) and \(to)")
            }
            guard links.contains(where: { Set($0.between) == [from, to] }) else {
                throw ScenarioError(message: "\(t.path): no [[link]] joins \(from) and \(to)")
            }
            switch kind {
            case .messages:
                traffic.append(Traffic(kind: kind, start: start, count: try t.requiredInt("count", min: 1, max: 1_000_000),
                                       size: try t.int("size", min: 16, max: 1 << 20) ?? 64, rate: try t.int("rate", min: 0, max: 100_000) ?? 0,
                                       from: from, to: to))
            case .resource:
                traffic.append(Traffic(kind: kind, start: start, count: 1, size: try t.requiredInt("size", min: 1, max: 1 << 30), rate: 0,
                                       from: from, to: to))
            }
            try t.noOtherKeys()
        }

        let items = try readItems(r.tables("item"), nodes: nodes, daemons: daemons, links: links, duration: duration)
        if !daemons.isEmpty, !traffic.isEmpty {
            throw ScenarioError(message: "a scenario whose nodes run daemons moves [[item]]s between their outboxes; [[traffic]] needs plain nodes")
        }

        var expectations: [CarrierExpectation] = []
        for var t in try r.tables("expect") {
            let at = try t.requiredInt("at", min: 0, max: duration)
            let roleText = try t.requiredString("role")
            guard let role = LinkRole(rawValue: roleText), role != .control else {
                throw ScenarioError(message: "\(t.path).role '\(roleText)' is not known; use reliable, bulk or unreliable")
            }
            let link = try linkName(&t)
            expectations.append(CarrierExpectation(at: at, role: role, link: link, settle: try t.int("settle", min: 1, max: 10_000)))
            try t.noOtherKeys()
        }

        var inv = Invariants(exactlyOnceInOrder: true, maxGap: nil, resourcesVerified: true)
        if var t = try r.table("invariants") {
            inv.exactlyOnceInOrder = try t.bool("exactly_once_in_order") ?? true
            inv.maxGap = try t.int("max_gap", min: 1, max: 600_000)
            inv.resourcesVerified = try t.bool("resources_verified") ?? true
            try t.noOtherKeys()
        }
        try r.noOtherKeys()
        var scenario = Scenario(name: name, description: description, nodes: nodes, policy: policy, duration: duration, links: links,
                                events: events, traffic: traffic, expectations: expectations, invariants: inv)
        scenario.copyMessages = copyMessages
        scenario.daemons = daemons
        scenario.items = items
        return scenario
    }
}
