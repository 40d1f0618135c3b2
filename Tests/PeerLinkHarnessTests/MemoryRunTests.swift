import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import TestKit
import XCTest
@testable import PeerLinkHarness

/// Scenarios really run: two PeerLink nodes over the in-memory medium, judged and reported.
final class MemoryRunTests: XCTestCase {
    let fallback = """
    name = "fallback"
    description = "Bluetooth goes silent; messages continue on Wi-Fi."
    duration = 4000

    [[link]]
    name = "bt"
    medium = "bluetooth"
    bandwidth = 250_000
    delay = 10

    [[link]]
    name = "wifi"
    medium = "wifi"
    delay = 1

    [[traffic]]
    kind = "messages"
    count = 300
    size = 100
    rate = 100

    [[event]]
    at = 1500
    action = "cut"
    link = "bt"

    [[expect]]
    at = 1000
    role = "reliable"
    link = "bt"

    [[expect]]
    at = 2500
    role = "reliable"
    link = "wifi"

    [invariants]
    max_gap = 1500
    """

    func testFallbackScenarioPassesAndIsReported() async throws {
        let s = try Scenario.parse(fallback)
        let scenario = s
        let run = try await within(120, "the in-memory run") { try await MemoryBackend().run(scenario) }
        let verdict = s.evaluate(run)
        XCTAssertTrue(verdict.passed, Report.text(s, run, verdict))
        XCTAssertEqual(run.streams.first?.arrivals, Array(0..<300))
        XCTAssertTrue(run.events.contains { $0.kind == "event" && $0.text == "cut bt" })
        XCTAssertTrue(run.events.contains { $0.kind == "carrier" && $0.text.hasPrefix("reliable") && $0.text.contains("nothing acknowledged or answered") },
                      "the move away from the silent link is recorded with its reason")

        // JSON: parses back into the same record and verdict.
        let data = try Report.json(s, run, verdict)
        let back = try JSONDecoder().decode(Report.Result.self, from: data)
        XCTAssertEqual(back.run, run)
        XCTAssertEqual(back.verdict, verdict)
        // SVG: well-formed XML with one lane per link and the carrier spans.
        let svg = Report.svg(s, run, verdict)
        let doc = try XMLDocument(xmlString: svg)
        let lanes = try doc.nodes(forXPath: "//*[local-name()='g'][@class='lane']")
        XCTAssertEqual(lanes.count, 2)
        XCTAssertFalse(try doc.nodes(forXPath: "//*[@class='carrier'][@data-role='reliable']").isEmpty)
        XCTAssertEqual(try doc.nodes(forXPath: "//*[@class='event']").count, 1)
    }

    func testAWrongExpectationFails() async throws {
        var s = try Scenario.parse(fallback)
        s.expectations = [Scenario.CarrierExpectation(at: 1000, role: .reliable, link: "wifi")]
        s.invariants.maxGap = 1
        let scenario = s
        let run = try await within(120, "the in-memory run") { try await MemoryBackend().run(scenario) }
        let verdict = s.evaluate(run)
        XCTAssertFalse(verdict.passed)
        let failed = verdict.checks.filter { !$0.passed }.map(\.name)
        XCTAssertEqual(failed, ["reliable on wifi at 1000 ms", "stream 1: largest delivery gap ≤ 1 ms (from the start of traffic at 0 ms)"])
        XCTAssertTrue(Report.text(s, run, verdict).hasPrefix("FAIL fallback"))
    }

    /// `settle`: a short detour at the checked instant passes, a longer one (a demotion) fails,
    /// and without `settle` the detour fails as before.
    func testSettleLetsAShortDetourPassButNotADemotion() {
        var s = try! Scenario.parse(fallback)
        s.traffic = []
        func run(detourUntil end: Int) -> RunRecord {
            RunRecord(scenario: "fallback", backend: "memory", duration: 9000, links: ["bt", "wifi"], upSpans: [],
                      carrierSpans: [.init(link: "bt", role: "reliable", from: 0, to: 4934),
                                     .init(link: "wifi", role: "reliable", from: 4934, to: end),
                                     .init(link: "bt", role: "reliable", from: end, to: 9000)],
                      events: [], streams: [], resources: [])
        }
        s.expectations = [Scenario.CarrierExpectation(at: 5000, role: .reliable, link: "bt", settle: 300)]
        let short = s.evaluate(run(detourUntil: 5001)).checks[0]
        XCTAssertTrue(short.passed, short.detail)
        XCTAssertEqual(short.name, "reliable on bt at 5000 ms (detours up to 300 ms)")
        XCTAssertEqual(short.detail, "carried by wifi at 5000 ms, a detour: back on bt by 5300 ms")
        let long = s.evaluate(run(detourUntil: 6000)).checks[0]
        XCTAssertFalse(long.passed)
        XCTAssertEqual(long.detail, "carried by wifi at 5000 ms, and by wifi at 5300 ms")
        s.expectations = [Scenario.CarrierExpectation(at: 5000, role: .reliable, link: "bt")]
        XCTAssertFalse(s.evaluate(run(detourUntil: 5001)).checks[0].passed)
    }

    /// The gap is judged over the whole stream: a stream that stops (at the cut, say) and never
    /// resumes has a gap to the end of the run, however evenly its messages came before; a
    /// stream whose first message is late has a gap from the start of the traffic.
    func testGapsBeforeTheFirstAndAfterTheLastArrivalCount() {
        var s = try! Scenario.parse(fallback)
        s.invariants.maxGap = 100
        func verdict(_ seqs: [Int], at times: [Int]) -> Verdict.Check? {
            let run = RunRecord(scenario: "fallback", backend: "memory", duration: 4000, links: ["bt", "wifi"], upSpans: [], carrierSpans: [],
                                events: [], streams: [RunRecord.MessageStream(sent: 300, failedSends: 0, arrivals: seqs, arrivalTimes: times)],
                                resources: [])
            return s.evaluate(run).checks.first { $0.name.hasPrefix("stream 1: largest delivery gap") }
        }
        // Every 10 ms until the cut at 1500 ms, then nothing: 150 of 300.
        let stopped = verdict(Array(0..<150), at: (0..<150).map { $0 * 10 })
        XCTAssertEqual(stopped?.passed, false)
        XCTAssertEqual(stopped?.detail, "2510 ms (from 1490 to 4000 ms, after the last arrival, to the end of the run (150 of 300 arrived))")
        // All 300, every 10 ms, but the first only at 900 ms.
        let late = verdict(Array(0..<300), at: (0..<300).map { 900 + $0 * 10 })
        XCTAssertEqual(late?.passed, false)
        XCTAssertEqual(late?.detail, "900 ms (from 0 to 900 ms, before the first arrival)")
        // All 300, every 10 ms from the start: the largest gap is 10 ms.
        let even = verdict(Array(0..<300), at: (0..<300).map { $0 * 10 })
        XCTAssertEqual(even?.passed, true)
        XCTAssertEqual(even?.detail, "10 ms (from 0 to 10 ms, between arrivals)")
        // Nothing at all: the whole run is the gap.
        let none = verdict([], at: [])
        XCTAssertEqual(none?.detail, "4000 ms (from 0 to 4000 ms, after the last arrival, to the end of the run (0 of 300 arrived))")
    }

    func testLostMessagesAreCounted() {
        let s = try! Scenario.parse(fallback)
        let run = RunRecord(scenario: "fallback", backend: "memory", duration: 4000, links: ["bt", "wifi"], upSpans: [], carrierSpans: [],
                            events: [], streams: [RunRecord.MessageStream(sent: 300, failedSends: 0, arrivals: [0, 1, 3, 3, 2], arrivalTimes: [1, 2, 3, 4, 5])],
                            resources: [])
        let v = s.evaluate(run)
        let check = v.checks.first { $0.name.contains("exactly once") }
        XCTAssertEqual(check?.passed, false)
        XCTAssertEqual(check?.detail, "5 delivered, 296 missing, 1 duplicated, OUT OF ORDER")
    }
}
