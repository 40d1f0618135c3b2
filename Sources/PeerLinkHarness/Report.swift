import Foundation

/// The JSON result, the text summary and the SVG timeline of a run.
public enum Report {
    /// What `--json` writes: the scenario, what happened and the verdict.
    public struct Result: Codable, Sendable {
        public var scenario: Scenario
        public var run: RunRecord
        public var verdict: Verdict

        public init(scenario: Scenario, run: RunRecord, verdict: Verdict) {
            self.scenario = scenario; self.run = run; self.verdict = verdict
        }
    }

    public static func json(_ scenario: Scenario, _ run: RunRecord, _ verdict: Verdict) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return try encoder.encode(Result(scenario: scenario, run: run, verdict: verdict))
    }

    /// A few lines for people: the verdict, every check and the carrier changes.
    public static func text(_ scenario: Scenario, _ run: RunRecord, _ verdict: Verdict) -> String {
        var s = "\(verdict.passed ? "PASS" : "FAIL") \(scenario.name) [\(run.backend), \(scenario.policy.rawValue), \(scenario.duration) ms]\n"
        for c in verdict.checks { s += "  \(c.passed ? "ok  " : "FAIL") \(c.name): \(c.detail)\n" }
        for g in verdict.gaps { s += "  gap  stream \(g.stream): largest delivery gap \(g.millis) ms (\(g.from)–\(g.to) ms)\n" }
        for m in run.events where m.kind != "carrier" || m.text.hasPrefix("reliable") || m.text.hasPrefix("bulk") {
            s += String(format: "  %6d ms  %@: %@\n", m.at, m.kind, m.text)
        }
        return s
    }

    /// A timeline picture: one lane per link; grey while the link is up, blue while it carries
    /// reliable messages (light blue: copies of them), orange while it carries bulk data,
    /// green while it carries unreliable messages; events as dashed lines; the
    /// largest delivery gap shaded red; expectations as ✓/✗ markers.
    public static func svg(_ scenario: Scenario, _ run: RunRecord, _ verdict: Verdict) -> String {
        let left = 90.0, width = 900.0, laneH = 46.0, top = 50.0
        let lanes = run.links
        let scale = width / Double(max(run.duration, 1))
        func x(_ t: Int) -> Double { left + Double(t) * scale }
        func y(_ link: String) -> Double { top + Double(lanes.firstIndex(of: link) ?? 0) * laneH }
        let checksTop = top + Double(lanes.count) * laneH + 40
        let height = checksTop + Double(verdict.checks.count + 1) * 16 + 20
        var s = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(left + width + 30))" height="\(Int(height))" font-family="sans-serif" font-size="11">
        <title>\(esc(scenario.name)): \(verdict.passed ? "pass" : "FAIL")</title>
        <text x="10" y="18" font-size="14" font-weight="bold">\(esc(scenario.name)) — \(verdict.passed ? "PASS" : "FAIL") (\(esc(run.backend)), \(esc(scenario.policy.rawValue)))</text>
        <text x="10" y="34" fill="#555">\(esc(scenario.description))</text>

        """
        for (i, link) in lanes.enumerated() {
            let ly = top + Double(i) * laneH
            s += "<g class=\"lane\" data-link=\"\(esc(link))\"><text x=\"10\" y=\"\(ly + 24)\">\(esc(link))</text>"
            s += "<rect x=\"\(left)\" y=\"\(ly + 4)\" width=\"\(width)\" height=\"\(laneH - 8)\" fill=\"#f4f4f4\"/></g>\n"
        }
        for sp in run.upSpans {
            s += "<rect class=\"up\" x=\"\(x(sp.from))\" y=\"\(y(sp.link) + 4)\" width=\"\(max(1, x(sp.to) - x(sp.from)))\" height=\"\(laneH - 8)\" fill=\"#d8d8d8\"/>\n"
        }
        for sp in run.carrierSpans {
            let (dy, color): (Double, String) = switch sp.role {
            case "reliable": (6, "#2c6fbb")
            case "reliable-copy": (6, "#9cc3ea")  // on the copy link, whose reliable row is otherwise empty
            case "bulk": (20, "#e08a1e")
            default: (34, "#6a9f3a")
            }
            s += "<rect class=\"carrier\" data-role=\"\(esc(sp.role ?? ""))\" x=\"\(x(sp.from))\" y=\"\(y(sp.link) + dy)\" width=\"\(max(1, x(sp.to) - x(sp.from)))\" height=\"10\" fill=\"\(color)\"/>\n"
        }
        for g in verdict.gaps where g.millis > 0 {
            s += "<rect class=\"gap\" x=\"\(x(g.from))\" y=\"\(top)\" width=\"\(max(1, x(g.to) - x(g.from)))\" height=\"\(Double(lanes.count) * laneH)\" fill=\"#d62728\" fill-opacity=\"0.25\"><title>largest delivery gap \(g.millis) ms</title></rect>\n"
        }
        for (i, m) in run.events.filter({ $0.kind == "event" }).enumerated() {
            s += "<line class=\"event\" x1=\"\(x(m.at))\" y1=\"\(top - 4)\" x2=\"\(x(m.at))\" y2=\"\(top + Double(lanes.count) * laneH)\" stroke=\"#c00\" stroke-dasharray=\"4,3\"/>"
            s += "<text x=\"\(x(m.at) + 3)\" y=\"\(top - 6 - Double(i % 2) * 10)\" fill=\"#c00\">\(esc(m.text))</text>\n"
        }
        for e in scenario.expectations {
            let ok = run.carrier(of: e.role.rawValue, at: e.at) == e.link
            s += "<text class=\"expect\" x=\"\(x(e.at) - 4)\" y=\"\(y(e.link) + laneH - 2)\" fill=\"\(ok ? "#1a7f1a" : "#c00")\" font-weight=\"bold\">\(ok ? "✓" : "✗")</text>\n"
        }
        // Time axis.
        let axisY = top + Double(lanes.count) * laneH + 14
        let step = max(100, Int((Double(run.duration) / 10 / 100).rounded(.up)) * 100)
        for t in stride(from: 0, through: run.duration, by: step) {
            s += "<text x=\"\(x(t) - 8)\" y=\"\(axisY)\" fill=\"#555\">\(t)</text>"
        }
        s += "<text x=\"\(left + width - 20)\" y=\"\(axisY + 12)\" fill=\"#555\">ms</text>\n"
        s += "<text x=\"10\" y=\"\(checksTop)\" fill=\"#2c6fbb\">■ reliable</text><text x=\"80\" y=\"\(checksTop)\" fill=\"#e08a1e\">■ bulk</text>"
        s += "<text x=\"130\" y=\"\(checksTop)\" fill=\"#6a9f3a\">■ unreliable</text><text x=\"210\" y=\"\(checksTop)\" fill=\"#999\">■ link up</text>"
        s += "<text x=\"280\" y=\"\(checksTop)\" fill=\"#d62728\">■ largest delivery gap</text>\n"
        for (i, c) in verdict.checks.enumerated() {
            s += "<text class=\"check\" x=\"10\" y=\"\(checksTop + 16 * Double(i + 1))\" fill=\"\(c.passed ? "#1a7f1a" : "#c00")\">\(c.passed ? "✓" : "✗") \(esc(c.name)): \(esc(c.detail))</text>\n"
        }
        s += "</svg>\n"
        return s
    }

    private static func esc(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
