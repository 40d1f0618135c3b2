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
}
