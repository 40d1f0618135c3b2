import PeerLinkTOML

extension Scenario {
    /// A node that runs a field daemon (`[[node]]` with `daemon = true`).
    public struct DaemonSpec: Sendable, Codable, Equatable {
        public var name: String
        /// The daemon's default time to live for what it queues (seconds; the `ttl` key of
        /// its configuration, docs/CONFIG.md).
        public var ttl: Int
    }

    /// A file placed in one daemon's outbox for another at a time on the timeline.
    public struct Item: Sendable, Codable, Equatable {
        public enum Outcome: String, Sendable, Codable {
            /// Received once, intact, by its peer, and settled at its holder.
            case delivered
            /// Its time to live passes first: moved aside and reported by its holder, never received.
            case expired
        }
        /// The file's name in `OUTBOX/<peer>/` (and so in the peer's inbox).
        public var name: String
        public var from: String
        public var to: String
        /// When it is placed (ms).
        public var at: Int
        public var size: Int
        public var expect: Outcome
        /// Delivered by this time at the latest (ms); nil: by the end of the run.
        public var by: Int?
    }

    static let defaultDaemonTTL = 7 * 86400

    /// `[[node]]` tables: each node's name, and whether it runs a daemon (all or none do).
    static func readNodes(_ tables: [TOMLFields]) throws -> ([String], [DaemonSpec]) {
        var names: [String] = [], daemons: [DaemonSpec] = []
        for var t in tables {
            let name = try t.requiredString("name")
            guard !name.isEmpty, !names.contains(name) else { throw ScenarioError(message: "\(t.path).name: '\(name)' is empty or named twice") }
            names.append(name)
            let ttl = try t.int("ttl", min: 1, max: 365 * 86400)
            if try t.bool("daemon") ?? false {
                daemons.append(DaemonSpec(name: name, ttl: ttl ?? defaultDaemonTTL))
            } else if ttl != nil {
                throw ScenarioError(message: "\(t.path).ttl: only a node with daemon = true has a time to live")
            }
            try t.noOtherKeys()
        }
        guard names.count >= 2 else { throw ScenarioError(message: "a scenario needs two or more [[node]]s") }
        guard daemons.isEmpty || daemons.count == names.count else {
            throw ScenarioError(message: "either every [[node]] runs a daemon or none does; without a daemon: "
                + names.filter { n in !daemons.contains { $0.name == n } }.joined(separator: ", "))
        }
        return (names, daemons)
    }

    /// `[[item]]` tables: from and to are daemons a `[[link]]` joins.
    static func readItems(_ tables: [TOMLFields], nodes: [String], daemons: [DaemonSpec], links: [LinkSpec],
                          duration: Int) throws -> [Item] {
        guard !tables.isEmpty else { return [] }
        guard !daemons.isEmpty else { throw ScenarioError(message: "[[item]]s need nodes that run daemons ([[node]] with daemon = true)") }
        var items: [Item] = []
        for var t in tables {
            let from = try t.requiredString("from"), to = try t.requiredString("to")
            guard nodes.contains(from), nodes.contains(to), from != to else {
                throw ScenarioError(message: "\(t.path): from and to must be two different nodes of \(nodes), got \(from) and \(to)")
            }
            guard links.contains(where: { Set($0.between) == [from, to] }) else {
                throw ScenarioError(message: "\(t.path): no [[link]] joins \(from) and \(to)")
            }
            let name = try t.string("name") ?? "\(from)-to-\(to)-\(items.count + 1).bin"
            guard !name.isEmpty, !name.contains("/"), !name.hasPrefix("."), !name.hasSuffix(".part"), !name.hasSuffix(".tmp") else {
                throw ScenarioError(message: "\(t.path).name '\(name)': a file name without '/', not hidden, not ending in .part or .tmp")
            }
            guard !items.contains(where: { $0.from == from && $0.to == to && $0.name == name }) else {
                throw ScenarioError(message: "\(t.path).name '\(name)': \(from) already holds an item of that name for \(to)")
            }
            let outcome = try t.choice("expect", ["delivered", "expired"]).flatMap(Item.Outcome.init(rawValue:)) ?? .delivered
            let at = try t.int("at", min: 0, max: duration) ?? 0
            items.append(Item(name: name, from: from, to: to, at: at, size: try t.requiredInt("size", min: 1, max: 1 << 30),
                              expect: outcome, by: try t.int("by", min: at, max: duration)))
            try t.noOtherKeys()
        }
        return items
    }
}
