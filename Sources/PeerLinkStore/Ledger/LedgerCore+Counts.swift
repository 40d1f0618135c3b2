import PeerLinkWire

/// Counting items without loading them (the metrics endpoint's gauges, at every scrape).
extension LedgerCore {
    func counts(states: Set<OutboundItem.State>) throws -> [OutboundCount] {
        guard !states.isEmpty else { return [] }
        // The states are the enum's own raw values, never input: safe to write into the SQL.
        let list = states.map { "'\($0.rawValue)'" }.sorted().joined(separator: ", ")
        return try db.query("""
            SELECT peer, state, COUNT(*) FROM outbound WHERE state IN (\(list))
            GROUP BY peer, state ORDER BY peer, state
            """, map: { row in
                let text = try row.text(1)
                guard let state = OutboundItem.State(rawValue: text) else { throw corrupt("an item state '\(text.prefix(20))'") }
                return OutboundCount(peer: try peer(try row.text(0)), state: state, count: Int(try row.integer(2)))
            })
    }
}
