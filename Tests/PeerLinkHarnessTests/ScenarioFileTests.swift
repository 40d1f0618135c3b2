import Foundation
import XCTest
@testable import PeerLinkHarness

/// The scenario file format: TOML, and clear errors for unusable files.
final class ScenarioFileTests: XCTestCase {
    let minimal = """
    [[link]]
    name = "bt"
    medium = "bluetooth"
    """

    func testScenarioDefaultsAndValidation() throws {
        let s = try Scenario.parse(minimal, defaultName: "min")
        XCTAssertEqual(s.name, "min")
        XCTAssertEqual(s.policy, .bluetoothFirst)
        XCTAssertEqual(s.duration, 5000)
        XCTAssertTrue(s.invariants.exactlyOnceInOrder)

        let bad: [(String, String)] = [
            ("", "at least one [[link]]"),
            (minimal + "\nbandwidth = \"fast\"", "link[1].bandwidth must be a whole number, not a string"),
            (minimal + "\nspeed = 3", "unknown key link[1].speed"),
            (minimal.replacingOccurrences(of: "bluetooth\"", with: "zigbee\""), "medium 'zigbee' is not known"),
            (minimal + "\n[[event]]\nat = 10\naction = \"cut\"\nlink = \"wifi\"", "event[1].link 'wifi' is not a [[link]]"),
            (minimal + "\n[[event]]\nat = 10\naction = \"explode\"\nlink = \"bt\"", "action 'explode' is not known"),
            (minimal + "\n[[event]]\nat = 10\naction = \"loss\"\nlink = \"bt\"", "needs loss"),
            (minimal + "\nup_at = 100", "at least one bluetooth or wifi link must be up at 0"),
            ("[[link]]\nname = \"p2p\"\nmedium = \"wifi-direct\"", "at least one bluetooth or wifi link must be up at 0"),
            (minimal + "\n[[link]]\nname = \"p2p\"\nmedium = \"wifi-direct\"\nup_at = 5", "a wifi-direct link appears when the nodes negotiate it"),
            (minimal + "\n[[link]]\nname = \"p\"\nmedium = \"wifi-direct\"\n[[link]]\nname = \"q\"\nmedium = \"wifi-direct\"", "at most one wifi-direct link"),
            (minimal.replacingOccurrences(of: "bluetooth", with: "pigeon"), "use bluetooth, wifi or wifi-direct"),
            ("policy = \"fastest\"\n" + minimal, "policy 'fastest' is not known"),
            ("duration = 5\n" + minimal, "duration = 5 is outside"),
            (minimal + "\n[[expect]]\nat = 1\nrole = \"control\"\nlink = \"bt\"", "role 'control' is not known"),
            (minimal + "\n[[traffic]]\nkind = \"messages\"", "traffic[1].count is missing"),
            (minimal + "\n[invariants]\nmax_gap = 0", "max_gap = 0 is outside"),
        ]
        for (text, message) in bad {
            XCTAssertThrowsError(try Scenario.parse(text), text) { e in
                XCTAssertTrue("\(e)".contains(message), "expected '\(message)' in '\(e)'")
            }
        }
    }

    func testTheScenarioLibraryParses() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scenarios").standardized.path
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".toml") }.sorted()
        XCTAssertEqual(files, ["both-from-start.toml", "bt-dies-stay-wifi.toml", "bt-only.toml", "flapping-at-half-rate.toml", "flapping-under-load.toml",
                               "loss-5pct-preferred.toml", "silent-cut-with-copies.toml", "wifi-appears-upgrade.toml", "wifi-dies-mid-transfer.toml", "wifi-only.toml"])
        let upgrades = try FileManager.default.contentsOfDirectory(atPath: dir + "/upgrade").filter { $0.hasSuffix(".toml") }.sorted()
        XCTAssertEqual(upgrades, ["file-moves-to-wifi-direct.toml", "group-torn-down-mid-transfer.toml"])
        let radios = try FileManager.default.contentsOfDirectory(atPath: dir + "/radios").filter { $0.hasSuffix(".toml") }.sorted()
        XCTAssertEqual(radios, ["upgrade-then-group-torn-down.toml"])
        let mesh = try FileManager.default.contentsOfDirectory(atPath: dir + "/mesh").filter { $0.hasSuffix(".toml") }.sorted()
        XCTAssertEqual(mesh, ["laptop-walks-past-three-nodes.toml", "three-nodes-one-path-dies.toml"])
        let daemons = try FileManager.default.contentsOfDirectory(atPath: dir + "/daemons").filter { $0.hasSuffix(".toml") }.sorted()
        XCTAssertEqual(daemons, ["laptop-collects-from-three-nodes.toml", "late-peer-and-expiry.toml"])
        for f in files + upgrades.map({ "upgrade/" + $0 }) + radios.map({ "radios/" + $0 }) + mesh.map({ "mesh/" + $0 })
            + daemons.map({ "daemons/" + $0 }) {
            let s = try Scenario.parse(String(contentsOfFile: dir + "/" + f, encoding: .utf8))
            XCTAssertEqual(s.name + ".toml", (f as NSString).lastPathComponent, "the scenario's name matches its file")
            XCTAssertFalse(s.description.isEmpty, f)
        }
    }

    func testScenariosOfSeveralNodes() throws {
        let base = """
        nodes = ["laptop", "pi1", "pi2"]
        [[link]]
        name = "one"
        medium = "bluetooth"
        between = ["laptop", "pi1"]
        [[link]]
        name = "two"
        medium = "wifi"
        between = ["laptop", "pi2"]
        up_at = 3000
        [[traffic]]
        kind = "messages"
        count = 5
        from = "pi2"
        to = "laptop"
        """
        let s = try Scenario.parse(base)
        XCTAssertEqual(s.nodes, ["laptop", "pi1", "pi2"])
        XCTAssertEqual(s.links.map(\.between), [["laptop", "pi1"], ["laptop", "pi2"]])
        XCTAssertEqual(s.traffic.first.map { [$0.from, $0.to] }, ["pi2", "laptop"])
        // Two nodes by default, as before.
        let two = try Scenario.parse("[[link]]\nname = \"x\"\nmedium = \"wifi\"\n[[traffic]]\nkind = \"messages\"\ncount = 1\n")
        XCTAssertEqual(two.nodes, ["sender", "receiver"])
        XCTAssertEqual(two.traffic.first.map { [$0.from, $0.to] }, ["sender", "receiver"])

        let bad: [(String, String)] = [
            (base.replacingOccurrences(of: "nodes = [\"laptop\", \"pi1\", \"pi2\"]", with: "nodes = [\"solo\"]"), "two or more different nodes"),
            (base.replacingOccurrences(of: "between = [\"laptop\", \"pi1\"]", with: "between = [\"laptop\", \"pi9\"]"), "must name two different nodes"),
            (base.replacingOccurrences(of: "from = \"pi2\"", with: "from = \"pi1\"\nfoo = 1").replacingOccurrences(of: "to = \"laptop\"", with: "to = \"pi2\""),
             "no [[link]] joins pi1 and pi2"),
            (base + "\n[[link]]\nname = \"back\"\nmedium = \"bluetooth\"\nbetween = [\"pi1\", \"laptop\"]\n", "dial the same way"),
            (base + "\n[[link]]\nname = \"group\"\nmedium = \"wifi-direct\"\n", "wifi-direct links need a scenario of two nodes"),
        ]
        for (text, why) in bad {
            XCTAssertThrowsError(try Scenario.parse(text), why) { e in
                XCTAssertTrue("\(e)".contains(why), "\(e) does not say \(why)")
            }
        }
    }
}
