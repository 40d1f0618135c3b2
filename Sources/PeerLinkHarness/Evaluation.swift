/// The verdict on one run: every expectation and invariant with what was observed.
public struct Verdict: Sendable, Codable, Equatable {
    public struct Check: Sendable, Codable, Equatable {
        public var name: String
        public var passed: Bool
        public var detail: String
    }

    public var scenario: String
    public var backend: String
    public var passed: Bool
    public var checks: [Check]
    /// Largest delivery gap of each message stream (ms) and where it was.
    public var gaps: [Gap]

    public struct Gap: Sendable, Codable, Equatable {
        public var stream: Int
        public var from: Int
        public var to: Int
        public var millis: Int { to - from }
    }
}

extension Scenario {
    /// Judges a run against this scenario's expectations and invariants.
    public func evaluate(_ run: RunRecord) -> Verdict {
        var checks: [Verdict.Check] = []
        for e in expectations {
            // Among the links of the expected link's pair: other pairs carry the role too.
            let pair = links.first { $0.name == e.link }.map { l in Set(links.filter { Set($0.between) == Set(l.between) }.map(\.name)) }
            let seen = run.carrier(of: e.role.rawValue, at: e.at, among: pair)
            var name = "\(e.role.rawValue) on \(e.link) at \(e.at) ms"
            var detail = "carried by \(seen ?? "no link") at \(e.at) ms"
            var passed = seen == e.link
            if let settle = e.settle {
                name += " (detours up to \(settle) ms)"
                if !passed {
                    let later = run.carrier(of: e.role.rawValue, at: e.at + settle, among: pair)
                    passed = later == e.link
                    detail += passed ? ", a detour: back on \(e.link) by \(e.at + settle) ms"
                                     : ", and by \(later ?? "no link") at \(e.at + settle) ms"
                }
            }
            checks.append(.init(name: name, passed: passed, detail: detail))
        }
        var gaps: [Verdict.Gap] = []
        let messageTraffic = traffic.filter { $0.kind == .messages }
        for (i, t) in messageTraffic.enumerated() {
            let s = i < run.streams.count ? run.streams[i] : RunRecord.MessageStream(sent: 0, failedSends: t.count, arrivals: [], arrivalTimes: [])
            if invariants.exactlyOnceInOrder {
                let expected = Array(0..<t.count)
                let dup = s.arrivals.count - Set(s.arrivals).count
                let missing = Set(expected).subtracting(s.arrivals).count
                let inOrder = s.arrivals == s.arrivals.sorted()
                checks.append(.init(name: "stream \(i + 1): \(t.count) reliable messages exactly once, in order",
                                    passed: s.arrivals == expected && s.failedSends == 0,
                                    detail: "\(s.arrivals.count) delivered, \(missing) missing, \(dup) duplicated, " +
                                        (inOrder ? "in order" : "OUT OF ORDER") + (s.failedSends > 0 ? ", \(s.failedSends) sends refused" : "")))
            }
            // Gaps are judged over the whole stream: from the start of the traffic to the first
            // arrival, between arrivals, and, when not every message arrived, from the last
            // arrival to the end of the run (a stream that stops and never resumes has a gap
            // as long as the rest of the run, not none).
            let complete = Set(s.arrivals).isSuperset(of: 0..<t.count)
            let times = [t.start] + s.arrivalTimes + (complete ? [] : [run.duration])
            var best = Verdict.Gap(stream: i + 1, from: t.start, to: t.start)
            for (x, y) in zip(times, times.dropFirst()) where y - x > best.millis {
                best = Verdict.Gap(stream: i + 1, from: x, to: y)
            }
            gaps.append(best)
            if let bound = invariants.maxGap {
                let place = best.from == t.start && best.to == s.arrivalTimes.first ? "before the first arrival"
                    : !complete && best.to == run.duration ? "after the last arrival, to the end of the run (\(Set(s.arrivals).count) of \(t.count) arrived)"
                    : "between arrivals"
                checks.append(.init(name: "stream \(i + 1): largest delivery gap ≤ \(bound) ms (from the start of traffic at \(t.start) ms)",
                                    passed: best.millis <= bound,
                                    detail: "\(best.millis) ms (from \(best.from) to \(best.to) ms, \(place))"))
            }
        }
        if invariants.resourcesVerified {
            for (i, r) in run.resources.enumerated() {
                checks.append(.init(name: "resource \(i + 1) (\(r.size) bytes) verified, not restarted", passed: r.verified && !r.restarted,
                                    detail: r.verified ? (r.restarted ? "verified but restarted" : "SHA-256 verified at \(r.finishedAt ?? 0) ms") : (r.error ?? "failed")))
            }
        }
        checks += itemChecks(run)
        return Verdict(scenario: name, backend: run.backend, passed: checks.allSatisfy(\.passed), checks: checks, gaps: gaps)
    }
}
