import XCTest
@testable import PeerLinkCore

/// A caller acts on why a link carries a role by switching on the reason, and reads the same
/// sentence `peerlink links` always printed.
final class CarrierReasonTests: XCTestCase {
    let bt = LinkMetrics(id: 1, linkClass: .bluetooth, age: 60_000, rttMillis: 40, throughput: 90_000)
    let wifi = LinkMetrics(id: 2, linkClass: .ip, age: 60_000, rttMillis: 5, throughput: 5_000_000)

    /// What an application might show for a reason: it switches on the rule.
    func badge(_ why: CarrierReason?) -> String {
        guard let why else { return "none" }
        if why.lossy != nil { return "last resort" }
        switch why.rule {
        case .bluetoothFirst: return "bluetooth"
        case .negotiatedForBulk(let speed, _): return "negotiated \(Int(speed / 1_000_000)) MB/s"
        case .fastestForBulk: return "fastest"
        case .noLiveLink, .notAllowed: return "none"
        default: return "other"
        }
    }

    func testBluetoothFirstWithBothLinksUpCarriesControlOnBluetooth() {
        let c = LinkPolicy(.bluetoothFirst).choose([bt, wifi])
        XCTAssertEqual(badge(c.reason[.control]), "bluetooth")
        XCTAssertEqual(badge(c.reason[.bulk]), "fastest")
    }

    func testBulkOnANegotiatedLinkSaysSo() {
        var group = wifi; group.id = 3; group.negotiated = true; group.age = 0; group.throughput = 20_000_000
        let c = LinkPolicy(.bluetoothFirst).choose([bt, wifi, group])
        XCTAssertEqual(c.carrier[.bulk], 3)
        XCTAssertEqual(badge(c.reason[.bulk]), "negotiated 19 MB/s", "20 MB/s weighed by the frame overhead")
    }

    func testALossyPreferredLinkIsALastResort() {
        var lossy = bt; lossy.loss = 0.5
        let c = LinkPolicy(.bluetoothFirst).choose([lossy])
        XCTAssertEqual(c.carrier[.reliable], 1)
        XCTAssertEqual(badge(c.reason[.reliable]), "last resort")
        XCTAssertEqual(c.reason[.reliable]?.rule, .bluetoothFirst, "the rule that ranked it is kept beside the loss")
        XCTAssertEqual(badge(LinkPolicy().choose([]).reason[.control]), "none")
    }

    /// The text of every rule and qualifier, as `peerlink links`, the daemon's API and the
    /// harness reports carried it before reasons were typed.
    func testDescriptionsKeepTheirWords() {
        let cases: [(CarrierReason, String)] = [
            (CarrierReason(.bluetoothFirst), "Bluetooth first"),
            (CarrierReason(.fallbackNoBluetooth), "fallback: no usable Bluetooth link"),
            (CarrierReason(.wifiFirst), "Wi-Fi first"),
            (CarrierReason(.fallbackNoIP), "fallback: no usable Wi-Fi/IP link"),
            (CarrierReason(.lowestRoundTrip(rtt: .milliseconds(12))), "lowest round-trip time (12 ms)"),
            (CarrierReason(.lowestRoundTrip(rtt: nil)), "lowest round-trip time (not measured)"),
            (CarrierReason(.fastestForBulk(bytesPerSecond: 99_900, frame: 4096)), "fastest link for bulk (99 kB/s in frames of 4096 bytes)"),
            (CarrierReason(.negotiatedForBulk(bytesPerSecond: 9_999_000, frame: nil)), "negotiated for bulk (9999 kB/s)"),
            (CarrierReason(.onlyClass(.bluetooth)), "only Bluetooth links allowed"),
            (CarrierReason(.onlyClass(.ip)), "only IP links allowed"),
            (CarrierReason(.noLiveLink), "no live link"),
            (CarrierReason(.notAllowed(policy: .ipOnly, live: [.bluetooth, .bluetooth])), "no link allowed by ip-only (live: bluetooth, bluetooth)"),
            (CarrierReason(.oldestLiveLink), "oldest live link"),
            (CarrierReason(.messageCopy(bytesPerSecond: 32_768, next: .wifiFirst)),
             "copy of reliable messages (copy-messages on, up to 32 kB/s): next link for messages, Wi-Fi first"),
            (CarrierReason(.wifiFirst, avoided: .ip, lossy: CarrierReason.Loss(loss: 0.5, limit: 0.2),
                           kept: CarrierReason.Hysteresis(dwell: .seconds(3), margin: 0.25)),
             "kept: Wi-Fi first; ip is avoided, used only when nothing else is up; loss 50% above 20%, last resort (the least lossy goes first) (hysteresis: the better link must be up 3000 ms and 25% better)"),
        ]
        for (why, text) in cases { XCTAssertEqual(why.description, text) }
    }
}
