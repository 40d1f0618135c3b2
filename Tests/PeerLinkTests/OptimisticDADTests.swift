import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkWiFiDirect

/// The machine's optimistic-DAD settings as `peerlink doctor` reads and reports them
/// (`OptimisticDAD`), from a directory laid out as `/proc/sys/net/ipv6/conf`.
final class OptimisticDADTests: XCTestCase {
    private var root = ""

    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-conf-\(UUID().uuidString.prefix(8))").path
        addTeardownBlock { [root] in try? FileManager.default.removeItem(atPath: root) }
    }

    private func write(_ values: [String: String]) throws {
        for (path, value) in values {
            let url = URL(fileURLWithPath: root).appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try value.write(to: url, atomically: true, encoding: .utf8)
        }
    }

    func testOffByDefaultWithTheLinesThatTurnItOn() throws {
        try write(["all/optimistic_dad": "0\n", "default/optimistic_dad": "0\n", "all/forwarding": "0\n"])
        let dad = OptimisticDAD.read(root: root)
        XCTAssertEqual(dad, OptimisticDAD(allOptimistic: false, defaultOptimistic: false, forwarding: false))
        XCTAssertFalse(dad.isOn)
        let check = dad.doctorCheck
        XCTAssertTrue(check.ok, "a slower set-up is not a failure")
        XCTAssertTrue(check.detail.hasPrefix("off"), check.detail)
        for line in OptimisticDAD.sysctlLines { XCTAssertTrue(check.fix?.contains(line) ?? false, "\(check.fix ?? "no fix") lacks \(line)") }
    }

    func testOnFromDefaultOrAll() throws {
        try write(["all/optimistic_dad": "0", "default/optimistic_dad": "1", "all/forwarding": "0"])
        XCTAssertTrue(OptimisticDAD.read(root: root).isOn, "new interfaces copy default")
        try write(["all/optimistic_dad": "1", "default/optimistic_dad": "0"])
        let dad = OptimisticDAD.read(root: root)
        XCTAssertTrue(dad.isOn, "the kernel also honours all")
        XCTAssertTrue(dad.doctorCheck.detail.hasPrefix("on"), dad.doctorCheck.detail)
        XCTAssertNil(dad.doctorCheck.fix)
    }

    func testForwardingTurnsItOffWithoutAHint() throws {
        try write(["all/optimistic_dad": "1", "default/optimistic_dad": "1", "all/forwarding": "1"])
        let dad = OptimisticDAD.read(root: root)
        XCTAssertFalse(dad.isOn)
        XCTAssertTrue(dad.doctorCheck.detail.contains("forwarding"), dad.doctorCheck.detail)
        XCTAssertNil(dad.doctorCheck.fix, "a router is not told to change")
    }

    func testAKernelWithoutItAndUnreadableValues() throws {
        let missing = OptimisticDAD.read(root: root + "/nothing")
        XCTAssertEqual(missing, OptimisticDAD(allOptimistic: nil, defaultOptimistic: nil, forwarding: false))
        XCTAssertTrue(missing.doctorCheck.detail.contains("not in this kernel"), missing.doctorCheck.detail)
        XCTAssertNil(missing.doctorCheck.fix)
        try write(["all/optimistic_dad": "yes", "default/optimistic_dad": ""])
        XCTAssertFalse(OptimisticDAD.read(root: root).isOn, "values that are not numbers count as unknown")
    }

    /// A tree laid out as the kernel's: `all`, `default`, `lo` and two interfaces, each with
    /// the files this kernel has (or a fixed list without /proc), values ending in a newline.
    /// Only `all` and `default` decide, and only `all.forwarding`: the interfaces and
    /// `default/forwarding` say the opposite, so a reader that looks there gets it wrong.
    func testATreeLaidOutLikeProcIsReadFromAllAndDefaultOnly() throws {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/sys/net/ipv6/conf/default"))
            ?? ["accept_dad", "accept_ra", "disable_ipv6", "forwarding", "mtu", "optimistic_dad", "use_optimistic"]
        var tree: [String: String] = [:]
        for dir in ["all", "default", "lo", "eth0", "wlan0"] {
            for name in names { tree["\(dir)/\(name)"] = "0\n" }
        }
        for (path, value) in ["all/optimistic_dad": "0\n", "default/optimistic_dad": "1\n", "all/forwarding": "0\n",
                              "default/forwarding": "1\n", "eth0/forwarding": "1\n", "lo/optimistic_dad": "0\n",
                              "wlan0/optimistic_dad": "0\n", "eth0/optimistic_dad": "0\n"] {
            tree[path] = value
        }
        try write(tree)
        let dad = OptimisticDAD.read(root: root)
        XCTAssertEqual(dad, OptimisticDAD(allOptimistic: false, defaultOptimistic: true, forwarding: false))
        XCTAssertTrue(dad.isOn, "new interfaces copy default's optimistic_dad")
        XCTAssertTrue(dad.doctorCheck.detail.hasPrefix("on:"), dad.doctorCheck.detail)

        // all.forwarding turns it off for every new interface.
        try write(["all/forwarding": "1\n"])
        let router = OptimisticDAD.read(root: root)
        XCTAssertEqual(router, OptimisticDAD(allOptimistic: false, defaultOptimistic: true, forwarding: true))
        XCTAssertTrue(router.doctorCheck.detail.hasPrefix("off while IPv6 forwarding is on"), router.doctorCheck.detail)
    }

    func testDoctorShowsItOnlyWhenWiFiIsUsable() {
        let radio = WiFiRadio(interface: "wlan0", phy: "phy0", address: nil)
        let facts = RadioFacts(interface: "wlan0", phy: "phy0", kernelTypes: [.station, .accessPoint, .p2pClient, .p2pGroupOwner, .p2pDevice],
                               supplicant: .managing(modes: ["infrastructure", "ap", "p2p"]), p2pDevice: .thisRadio,
                               networkManager: .notRunning)
        let off = OptimisticDAD(allOptimistic: false, defaultOptimistic: false, forwarding: false)
        let usable = DoctorWiFi.report(radios: [radio], reports: [RadioCapabilities.evaluate(facts)], missing: nil, asked: nil, dad: off)
        XCTAssertTrue(usable.usable)
        XCTAssertEqual(usable.checks.last, off.doctorCheck)
        let none = DoctorWiFi.report(radios: [], reports: [], missing: nil, asked: nil, dad: off)
        XCTAssertFalse(none.checks.contains { $0.name == off.doctorCheck.name })
    }
}
