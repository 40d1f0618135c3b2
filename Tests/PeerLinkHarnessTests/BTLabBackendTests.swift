import Foundation
import XCTest
@testable import PeerLinkHarness

/// What the Bluetooth-lab backend refuses, before touching any radio (runs on the host; the
/// backend itself runs in the VM: scripts/harness-btlab.sh).
final class BTLabBackendTests: XCTestCase {
    let lab = ["PEERLINK_LAB_HCI0": "00:AA:01:00:00:00", "PEERLINK_LAB_HCI1": "00:AA:01:01:00:01"]

    func scenario(_ body: String) throws -> Scenario {
        try Scenario.parse("""
        name = "t"
        duration = 3000
        \(body)
        [[traffic]]
        kind = "messages"
        count = 10
        size = 100
        """)
    }

    func testLibraryScenariosItCanRun() throws {
        let backend = BTLabBackend(environment: lab)
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scenarios").standardized
        for name in ["bt-only", "wifi-only", "both-from-start", "bt-dies-stay-wifi", "wifi-dies-mid-transfer", "wifi-appears-upgrade", "flapping-under-load"] {
            let text = try String(contentsOf: dir.appendingPathComponent("\(name).toml"), encoding: .utf8)
            XCTAssertNil(backend.refusal(try Scenario.parse(text, defaultName: name)), name)
        }
        let lossy = try String(contentsOf: dir.appendingPathComponent("loss-5pct-preferred.toml"), encoding: .utf8)
        XCTAssertEqual(backend.refusal(try Scenario.parse(lossy)), "loss on the Bluetooth link 'bt' cannot be produced on a real radio here")
    }

    func testRefusals() throws {
        let backend = BTLabBackend(environment: lab)
        let twoWifi = try scenario("""
        [[link]]
        name = "a"
        medium = "wifi"
        [[link]]
        name = "b"
        medium = "wifi"
        """)
        XCTAssertEqual(backend.refusal(twoWifi), "the btlab backend runs one bluetooth and one wifi link at most")
        let bt = try scenario("""
        [[link]]
        name = "bt"
        medium = "bluetooth"
        """)
        XCTAssertNil(backend.refusal(bt))
        // Outside the lab there are no controllers to use.
        XCTAssertTrue(BTLabBackend(environment: [:]).refusal(bt)?.contains("no lab controllers") ?? false)
    }

    func testRunOutsideTheLabFailsClearly() async throws {
        let bt = try scenario("""
        [[link]]
        name = "bt"
        medium = "bluetooth"
        """)
        do {
            _ = try await BTLabBackend(environment: [:]).run(bt)
            XCTFail("no lab here")
        } catch let e as HarnessError {
            XCTAssertTrue("\(e)".hasPrefix("the btlab backend cannot run this scenario"), "\(e)")
        }
    }

    func testWiFiDirectNeedsTheLabsRadios() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scenarios/radios").standardized
        let text = try String(contentsOf: dir.appendingPathComponent("upgrade-then-group-torn-down.toml"), encoding: .utf8)
        let upgrade = try Scenario.parse(text)
        XCTAssertEqual(BTLabBackend(environment: lab).refusal(upgrade),
                       "wifi-direct links need the lab's Wi-Fi radios wlan0/wlan1 (scripts/harness-btlab.sh boots them for such scenarios)")
        var withRadios = lab
        for k in 0..<2 {
            withRadios["PEERLINK_LAB_WIFI\(k)"] = "wlan\(k)"
            withRadios["PEERLINK_LAB_WIFI\(k)_BUS"] = "unix:path=/run/wifi\(k)/bus"
            withRadios["PEERLINK_LAB_WIFI\(k)_MAC"] = "02:00:00:00:0\(k):00"
        }
        let backend = BTLabBackend(environment: withRadios)
        XCTAssertEqual(backend.radios[1]?.interface, "wlan1")
        XCTAssertEqual(backend.radios[1]?.bus, "unix:path=/run/wifi1/bus")
        XCTAssertNil(backend.refusal(upgrade))
        // The memory backend's upgrade scenarios run here too.
        let memoryDir = dir.deletingLastPathComponent().appendingPathComponent("upgrade")
        for name in ["file-moves-to-wifi-direct", "group-torn-down-mid-transfer"] {
            let t = try String(contentsOf: memoryDir.appendingPathComponent("\(name).toml"), encoding: .utf8)
            XCTAssertNil(backend.refusal(try Scenario.parse(t)), name)
        }
        let lossy = try scenario("""
        [[link]]
        name = "bt"
        medium = "bluetooth"
        [[link]]
        name = "p2p"
        medium = "wifi-direct"
        loss = 0.05
        """)
        XCTAssertEqual(backend.refusal(lossy), "loss on the Wi-Fi Direct group 'p2p' cannot be produced on the lab's radios")
    }
}
