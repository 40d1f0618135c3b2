import Foundation
import TestKit
import XCTest
@testable import PeerLinkHarness

/// Field daemons in the harness: the scenario syntax, the item checks, and the library's
/// daemon scenarios run on the memory backend.
final class DaemonScenarioTests: XCTestCase {
    let pair = """
    name = "pair"
    duration = 20000

    [[node]]
    name = "laptop"
    daemon = true

    [[node]]
    name = "pi"
    daemon = true
    ttl = 60

    [[link]]
    name = "bt"
    medium = "bluetooth"
    between = ["laptop", "pi"]
    bandwidth = 100_000
    up_at = 5000

    [[item]]
    from = "pi"
    to = "laptop"
    size = 10_000
    """

    private var library: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scenarios/daemons").standardized.path
    }

    func testDaemonSyntax() throws {
        let s = try Scenario.parse(pair)
        XCTAssertEqual(s.nodes, ["laptop", "pi"])
        XCTAssertEqual(s.daemons, [.init(name: "laptop", ttl: Scenario.defaultDaemonTTL), .init(name: "pi", ttl: 60)])
        XCTAssertEqual(s.items, [.init(name: "pi-to-laptop-1.bin", from: "pi", to: "laptop", at: 0, size: 10_000, expect: .delivered, by: nil)])

        let bad: [(String, String)] = [
            ("nodes = [\"a\", \"b\"]\n" + pair, "either with nodes = [...] or with [[node]] tables"),
            (pair.replacingOccurrences(of: "name = \"laptop\"\ndaemon = true", with: "name = \"laptop\""),
             "either every [[node]] runs a daemon or none does; without a daemon: laptop"),
            (pair + "\n[[traffic]]\nkind = \"messages\"\ncount = 1\nfrom = \"pi\"\nto = \"laptop\"", "[[traffic]] needs plain nodes"),
            (pair + "\n[[item]]\nfrom = \"pi\"\nto = \"pi\"\nsize = 1", "two different nodes"),
            (pair + "\n[[item]]\nfrom = \"pi\"\nto = \"laptop\"\nsize = 1\nname = \".hidden\"", "not hidden"),
            (pair + "\n[[item]]\nfrom = \"pi\"\nto = \"laptop\"\nsize = 1\nname = \"pi-to-laptop-1.bin\"", "already holds an item of that name"),
            (pair + "\n[[item]]\nfrom = \"pi\"\nto = \"laptop\"\nsize = 1\nexpect = \"lost\"", "expect"),
            (pair + "\n[[item]]\nfrom = \"pi\"\nto = \"laptop\"\nsize = 1\ncolour = 3", "unknown key item[2].colour"),
            ("[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\nttl = 3\n[[link]]\nname = \"l\"\nmedium = \"wifi\"\nbetween = [\"a\", \"b\"]",
             "only a node with daemon = true has a time to live"),
            ("[[link]]\nname = \"l\"\nmedium = \"wifi\"\n[[item]]\nfrom = \"sender\"\nto = \"receiver\"\nsize = 1", "[[item]]s need nodes that run daemons"),
        ]
        for (text, message) in bad {
            XCTAssertThrowsError(try Scenario.parse(text), text) { e in
                XCTAssertTrue("\(e)".contains(message), "expected '\(message)' in '\(e)'")
            }
        }
    }

    /// The item checks a user reads: each way an item can go wrong fails its check, saying how.
    func testItemChecksFailOnDuplicatesLossesWrongPeersAndDamage() throws {
        let s = try Scenario.parse(pair)
        func check(_ edit: (inout RunRecord.ItemOutcome) -> Void) -> Verdict.Check? {
            var o = RunRecord.ItemOutcome(name: "pi-to-laptop-1.bin", from: "pi", to: "laptop", size: 10_000, placedAt: 0, queuedAt: 2000,
                                          receptions: [.init(node: "laptop", at: 5300, intact: true)], settledAt: 5320)
            edit(&o)
            let run = RunRecord(scenario: "pair", backend: "memory", duration: 20000, links: ["bt"], upSpans: [], carrierSpans: [],
                                events: [], streams: [], resources: [], items: [o])
            return s.evaluate(run).checks.first
        }
        let good = try XCTUnwrap(check { _ in })
        XCTAssertTrue(good.passed, good.detail)
        XCTAssertEqual(good.detail, "received by laptop at 5300 ms, SHA-256 verified, receipt at pi at 5320 ms; queued at 2000 ms")

        let cases: [(String, (inout RunRecord.ItemOutcome) -> Void)] = [
            ("received 2 times", { $0.receptions.append(.init(node: "laptop", at: 9000, intact: true)) }),
            ("never received", { $0.receptions = [] }),
            ("received by a node it was not for", { $0.receptions = [.init(node: "pi", at: 5300, intact: true)] }),
            ("landed content differs", { $0.receptions[0].intact = false }),
            ("no receipt settled at pi", { $0.settledAt = nil }),
            ("expired at 7000 ms", { $0.expiredAt = 7000 }),
        ]
        for (words, edit) in cases {
            let c = try XCTUnwrap(check(edit))
            XCTAssertFalse(c.passed, words)
            XCTAssertTrue(c.detail.contains(words), "expected '\(words)' in '\(c.detail)'")
        }

        var expiring = s
        expiring.items[0].expect = .expired
        let run = RunRecord(scenario: "pair", backend: "memory", duration: 20000, links: ["bt"], upSpans: [], carrierSpans: [], events: [],
                            streams: [], resources: [],
                            items: [.init(name: "pi-to-laptop-1.bin", from: "pi", to: "laptop", size: 10_000, queuedAt: 2000, expiredAt: 62000,
                                          reason: "time to live passed")])
        XCTAssertTrue(expiring.evaluate(run).passed)
        var received = run
        received.items[0].receptions = [.init(node: "laptop", at: 3000, intact: true)]
        XCTAssertFalse(expiring.evaluate(received).passed, "an item expected to expire that arrives fails")
    }

    /// The library's daemon scenarios run as a user runs them (memory backend) and pass: every
    /// item once at its peer, intact, settled; the late one after its peer came; the stale one expired.
    func testTheLibrarysDaemonScenariosPass() async throws {
        for file in ["laptop-collects-from-three-nodes.toml", "late-peer-and-expiry.toml"] {
            let s = try Scenario.parse(String(contentsOfFile: library + "/" + file, encoding: .utf8))
            let backend = MemoryBackend(seed: 1)
            let started = Date()
            let run = try await within(120, "the daemon run of \(file)") { try await backend.run(s) }
            let seconds = Date().timeIntervalSince(started)
            let verdict = s.evaluate(run)
            XCTAssertTrue(verdict.passed, "seed \(backend.seed):\n" + Report.text(s, run, verdict))
            XCTAssertEqual(run.items.count, s.items.count)
            for (item, outcome) in zip(s.items, run.items) where item.expect == .delivered {
                XCTAssertEqual(outcome.receptions.map(\.node), [item.to], "\(item.name), seed \(backend.seed)")
            }
            print("\(s.name): \(s.duration) ms of virtual time in \(String(format: "%.2f", seconds)) s")
        }
        let late = try Scenario.parse(String(contentsOfFile: library + "/late-peer-and-expiry.toml", encoding: .utf8))
        let run = try await within(120, "the late-peer run") { try await MemoryBackend(seed: 1).run(late) }
        let plan = try XCTUnwrap(run.items.first { $0.name == "survey-plan.json" })
        XCTAssertGreaterThanOrEqual(plan.receptions.first?.at ?? 0, 21000, "received only once its peer came into range")
        let stale = try XCTUnwrap(run.items.first { $0.name == "stale-readings.csv" })
        XCTAssertNotNil(stale.expiredAt)
        XCTAssertTrue(stale.receptions.isEmpty)
    }
}
