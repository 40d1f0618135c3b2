extension Scenario {
    /// One check per `[[item]]`: delivered exactly once, intact, to its peer, settled at its
    /// holder (and in time, with `by`); or, when it is expected to expire, expired and
    /// reported by its holder and never received.
    func itemChecks(_ run: RunRecord) -> [Verdict.Check] {
        items.enumerated().map { i, item in
            let o = i < run.items.count ? run.items[i]
                : RunRecord.ItemOutcome(name: item.name, from: item.from, to: item.to, size: item.size)
            let label = "item \(item.name) \(item.from)→\(item.to) (\(item.size) bytes)"
            let queued = o.queuedAt.map { "queued at \($0) ms" } ?? "never queued"
            let received = o.receptions.map { "\($0.node) at \($0.at) ms\($0.intact ? "" : " (CONTENT DIFFERS)")" }
            switch item.expect {
            case .expired:
                let passed = o.expiredAt != nil && o.receptions.isEmpty
                var detail = o.expiredAt.map { "expired at \($0) ms and reported (\(o.reason ?? "no reason given"))" } ?? "NOT EXPIRED"
                detail += o.receptions.isEmpty ? ", never received" : ", yet received by " + received.joined(separator: ", ")
                return .init(name: "\(label) expires, reported", passed: passed, detail: "\(detail); \(queued)")
            case .delivered:
                var problems: [String] = []
                if o.receptions.isEmpty { problems.append("never received") }
                if o.receptions.count > 1 { problems.append("received \(o.receptions.count) times") }
                if o.receptions.contains(where: { $0.node != item.to }) { problems.append("received by a node it was not for") }
                if o.receptions.contains(where: { !$0.intact }) { problems.append("landed content differs from the placed file") }
                if o.settledAt == nil { problems.append("no receipt settled at \(item.from)") }
                if let at = o.expiredAt { problems.append("expired at \(at) ms") }
                if let at = o.failedAt { problems.append("failed at \(at) ms: \(o.reason ?? "")") }
                if let by = item.by, let r = o.receptions.first, r.at > by { problems.append("later than \(by) ms") }
                let landed = received.isEmpty ? "" : "received by " + received.joined(separator: ", ") + ", SHA-256 "
                    + (o.receptions.allSatisfy(\.intact) ? "verified" : "MISMATCH")
                let settled = o.settledAt.map { ", receipt at \(item.from) at \($0) ms" } ?? ""
                let detail = problems.isEmpty ? "\(landed)\(settled); \(queued)" : problems.joined(separator: ", ") + "; \(queued)"
                    + (landed.isEmpty ? "" : "; \(landed)")
                return .init(name: "\(label) delivered exactly once, intact" + (item.by.map { ", by \($0) ms" } ?? ""),
                             passed: problems.isEmpty, detail: detail)
            }
        }
    }
}
