import XCTest
@testable import PeerLinkCore

final class LinkPolicyTests: XCTestCase {
    let bt = LinkMetrics(id: 1, linkClass: .bluetooth, age: 60_000, rttMillis: 40, throughput: 90_000)
    let wifi = LinkMetrics(id: 2, linkClass: .ip, age: 60_000, rttMillis: 5, throughput: 5_000_000)

    func testBluetoothFirstKeepsMessagesOnBluetoothAndBulkOnWifi() {
        let c = LinkPolicy(.bluetoothFirst).choose([bt, wifi])
        XCTAssertEqual(c.carrier[.control], 1)
        XCTAssertEqual(c.carrier[.reliable], 1)
        XCTAssertEqual(c.carrier[.unreliable], 1)
        XCTAssertEqual(c.carrier[.bulk], 2)
        XCTAssertEqual(c.reason[.reliable], CarrierReason(.bluetoothFirst))
        XCTAssertEqual(c.reason[.reliable]?.description, "Bluetooth first")
        guard case .fastestForBulk(_, frame: nil)? = c.reason[.bulk]?.rule else { return XCTFail("\(String(describing: c.reason[.bulk]))") }
    }

    func testFallbackWhenBluetoothDiesAndBackWithHysteresis() {
        let p = LinkPolicy(.bluetoothFirst)
        let first = p.choose([bt, wifi])
        let wifiOnly = p.choose([wifi], previous: first)
        XCTAssertEqual(wifiOnly.carrier[.reliable], 2)
        XCTAssertEqual(wifiOnly.reason[.reliable]?.rule, .fallbackNoBluetooth)
        // Bluetooth returns: not taken back until it has been up for the dwell time.
        var fresh = bt; fresh.age = 500
        let early = p.choose([fresh, wifi], previous: wifiOnly)
        XCTAssertEqual(early.carrier[.reliable], 2)
        XCTAssertEqual(early.reason[.reliable],
                       CarrierReason(.fallbackNoBluetooth, kept: CarrierReason.Hysteresis(dwell: .seconds(3), margin: 0.25)))
        fresh.age = 3500
        XCTAssertEqual(p.choose([fresh, wifi], previous: early).carrier[.reliable], 1)
    }

    func testMessageCopiesGoToTheNextBestUsableLink() {
        XCTAssertNil(LinkPolicy(.bluetoothFirst).choose([bt, wifi]).messageCopy, "off by default")
        var p = LinkPolicy(.bluetoothFirst)
        p.copyMessages = true
        let c = p.choose([bt, wifi])
        XCTAssertEqual(c.carrier[.reliable], 1)
        XCTAssertEqual(c.messageCopy, 2)
        XCTAssertEqual(c.messageCopyReason?.rule, .messageCopy(bytesPerSecond: c.messageCopyRate ?? 0, next: .fallbackNoBluetooth))
        // A quarter of the copy link's throughput (5 MB/s here), never less than 32 KiB/s.
        XCTAssertEqual(c.messageCopyRate ?? 0, 0.25 * 5_000_000, accuracy: 5_000)
        var w = LinkPolicy(.wifiFirst)
        w.copyMessages = true
        let onBluetooth = w.choose([bt, wifi])
        XCTAssertEqual(onBluetooth.messageCopy, 1)
        XCTAssertEqual(onBluetooth.messageCopyRate, LinkPolicy.minimumCopyRate, "a quarter of 90 kB/s is below the minimum")
        XCTAssertNil(p.choose([wifi]).messageCopy, "one link: nothing to copy onto")
        var lossy = wifi; lossy.loss = 0.5
        XCTAssertNil(p.choose([bt, lossy]).messageCopy, "not onto a lossy link")
        p.avoid = [.ip]
        XCTAssertNil(p.choose([bt, wifi]).messageCopy, "not onto an avoided medium")
    }

    func testWifiFirstAndOnlyPolicies() {
        XCTAssertEqual(LinkPolicy(.wifiFirst).choose([bt, wifi]).carrier[.reliable], 2)
        XCTAssertEqual(LinkPolicy(.wifiFirst).choose([bt]).carrier[.reliable], 1)
        XCTAssertEqual(LinkPolicy(.bluetoothOnly).choose([bt, wifi]).carrier[.bulk], 1)
        let none = LinkPolicy(.bluetoothOnly).choose([wifi])
        XCTAssertNil(none.carrier[.reliable])
        XCTAssertEqual(none.reason[.reliable]?.rule, .notAllowed(policy: .bluetoothOnly, live: [.ip]))
        XCTAssertEqual(none.reason[.reliable]?.description, "no link allowed by bluetooth-only (live: ip)")
        XCTAssertEqual(LinkPolicy(.ipOnly).choose([bt, wifi]).carrier[.control], 2)
    }

    func testLowestLatencyWithMarginAgainstFlapping() {
        let p = LinkPolicy(.lowestLatency)
        let a = LinkMetrics(id: 1, linkClass: .ip, age: 10_000, rttMillis: 10)
        var b = LinkMetrics(id: 2, linkClass: .bluetooth, age: 10_000, rttMillis: 9)
        let c1 = p.choose([a, b])
        XCTAssertEqual(c1.carrier[.reliable], 2)
        // a becomes slightly better: within the 25 % margin, the carrier stays.
        b.rttMillis = 11
        XCTAssertEqual(p.choose([a, b], previous: c1).carrier[.reliable], 2)
        b.rttMillis = 30
        XCTAssertEqual(p.choose([a, b], previous: c1).carrier[.reliable], 1)
    }

    /// Two links on one LAN measure 0 and 1 ms in turn: not a reason to swap carriers (the
    /// relative margin alone calls 0 against 1 ms a 100 % gain).
    func testRoundTripsWithinAFewMillisecondsDoNotSwapTheCarrier() {
        let p = LinkPolicy(.bluetoothFirst)
        var a = LinkMetrics(id: 1, linkClass: .ip, age: 10_000, rttMillis: 1)
        var b = LinkMetrics(id: 2, linkClass: .ip, age: 10_000, rttMillis: 0)
        let first = p.choose([a, b])
        XCTAssertEqual(first.carrier[.reliable], 2)
        var previous = first
        for round in 0..<10 {
            (a.rttMillis, b.rttMillis) = round % 2 == 0 ? (0, 1) : (1, 0)
            previous = p.choose([a, b], previous: previous)
            XCTAssertEqual(previous.carrier[.reliable], 2, "round \(round): 1 ms is noise")
        }
        b.rttMillis = 30
        XCTAssertEqual(p.choose([a, b], previous: previous).carrier[.reliable], 1, "30 ms against 0 ms is a reason")
    }

    func testLossyLinkIsLastResortAndLeftAtOnce() {
        let p = LinkPolicy(.bluetoothFirst)
        var lossy = bt; lossy.loss = 0.3
        let c = p.choose([lossy, wifi], previous: p.choose([bt, wifi]))
        XCTAssertEqual(c.carrier[.reliable], 2, "a demoted carrier is not kept by hysteresis")
        XCTAssertEqual(c.reason[.reliable], CarrierReason(.fallbackNoBluetooth))
        XCTAssertEqual(p.choose([lossy]).carrier[.reliable], 1, "still used when it is all there is")
        XCTAssertEqual(p.choose([lossy]).reason[.reliable], CarrierReason(.bluetoothFirst, lossy: CarrierReason.Loss(loss: 0.3, limit: 0.2)))
    }

    /// Seen in the Bluetooth lab (flapping-under-load): after cuts both links had lost probes;
    /// Bluetooth-first kept choosing a Bluetooth link that lost everything, and the session
    /// bounced between it and Wi-Fi until the run ended. When every link loses too much, the
    /// least lossy one carries, whatever the preference, and keeps carrying.
    func testWhenAllLinksAreLossyTheLeastLossyCarries() {
        let p = LinkPolicy(.bluetoothFirst)
        var deadBT = bt; deadBT.loss = 1.0
        var shakyWifi = wifi; shakyWifi.loss = 0.35
        let c = p.choose([deadBT, shakyWifi], previous: p.choose([bt, wifi]))
        for role in [LinkRole.reliable, .bulk, .unreliable] {
            XCTAssertEqual(c.carrier[role], 2, "\(role)")
        }
        XCTAssertEqual(c.reason[.reliable]?.lossy, CarrierReason.Loss(loss: 0.35, limit: 0.2))
        XCTAssertEqual(c.reason[.reliable]?.description,
                       "fallback: no usable Bluetooth link; loss 35% above 20%, last resort (the least lossy goes first)")
        // Stays there while Bluetooth is still the lossier one.
        var better = deadBT; better.loss = 0.5
        XCTAssertEqual(p.choose([better, shakyWifi], previous: c).carrier[.reliable], 2)
        // Bluetooth healthy again: Bluetooth first.
        XCTAssertEqual(p.choose([bt, shakyWifi], previous: c).carrier[.reliable], 1)
    }

    func testAvoidedMediumOnlyWhenNothingElseIsUp() {
        // A Pi on battery that would rather not keep Wi-Fi busy: even bulk stays on Bluetooth.
        var p = LinkPolicy(.bluetoothFirst)
        p.avoid = [.ip]
        let c = p.choose([bt, wifi])
        for role in LinkRole.allCases { XCTAssertEqual(c.carrier[role], 1, "\(role)") }
        // Bluetooth gone: the avoided link is used, and says so.
        let fallback = p.choose([wifi], previous: c)
        XCTAssertEqual(fallback.carrier[.bulk], 2)
        XCTAssertEqual(fallback.reason[.bulk]?.avoided, .ip, "\(String(describing: fallback.reason[.bulk]))")
        // Bluetooth back and settled: it takes over again (better tier).
        XCTAssertEqual(p.choose([bt, wifi], previous: fallback).carrier[.bulk], 1)
        // An avoided link still beats a lossy one.
        var lossyBT = bt
        lossyBT.loss = 0.5
        XCTAssertEqual(p.choose([lossyBT, wifi]).carrier[.reliable], 2)
    }

    func testSmallFramesCostBulkThroughput() {
        // Same measured throughput: 600-byte frames (LE credit-based) lose ~6 % to per-frame
        // overhead against 4 KiB frames, so bulk prefers the bigger frames.
        let le = LinkMetrics(id: 3, linkClass: .bluetooth, age: 60_000, rttMillis: 40, throughput: 100_000, maxFrame: 600)
        let bredr = LinkMetrics(id: 4, linkClass: .bluetooth, age: 60_000, rttMillis: 40, throughput: 100_000, maxFrame: 4096)
        let c = LinkPolicy(.bluetoothOnly).choose([le, bredr])
        XCTAssertEqual(c.carrier[.bulk], 4)
        guard case .fastestForBulk(_, frame: 4096)? = c.reason[.bulk]?.rule else { return XCTFail("\(String(describing: c.reason[.bulk]))") }
        // Without frame sizes the lower link id wins the tie.
        var a = le, b = bredr
        a.maxFrame = nil; b.maxFrame = nil
        XCTAssertEqual(LinkPolicy(.bluetoothOnly).choose([a, b]).carrier[.bulk], 3)
    }

    func testNoLinks() {
        let c = LinkPolicy().choose([])
        XCTAssertTrue(c.carrier.isEmpty)
        XCTAssertEqual(c.reason[.control]?.rule, .noLiveLink)
    }

    func testDeterministic() {
        let p = LinkPolicy(.lowestLatency)
        let x = LinkMetrics(id: 7, linkClass: .ip, age: 0), y = LinkMetrics(id: 3, linkClass: .ip, age: 0)
        XCTAssertEqual(p.choose([x, y]).carrier[.reliable], 3, "ties break on the lower link id")
        XCTAssertEqual(p.choose([y, x]), p.choose([x, y]))
    }
}
