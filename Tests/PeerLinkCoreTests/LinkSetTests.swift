import XCTest
import PeerLinkWire
@testable import PeerLinkCore

/// The link set's decisions, without a socket: policy applied to the core, reasons, carrier
/// changes reported once, a link's death handled once, the upgrade trigger.
final class LinkSetTests: XCTestCase {
    func link(_ id: LinkID, _ c: LinkClass, fast: Bool) -> LinkSet.Link {
        LinkSet.Link(id: id, linkClass: c, fast: fast, negotiated: false, maxFrame: 65535)
    }

    func testBluetoothFirstCarriesMessagesAndReportsEachChangeOnce() {
        var set = LinkSet(policy: LinkPolicy(.bluetoothFirst))
        var core = SessionCore(role: .initiator)
        core.linkUp(1, now: 0)
        set.add(link(1, .bluetooth, fast: false))
        set.apply(to: &core, now: 0)
        XCTAssertEqual(core.preferredLink, 1)
        XCTAssertFalse(core.fastLinksOnly, "a Bluetooth link cuts messages small")
        let first = set.carrierChanges(in: core)
        XCTAssertEqual(first.map(\.role), [.reliable, .bulk, .unreliable])
        XCTAssertEqual(set.carrierChanges(in: core), [], "the same carriers reported again")
        XCTAssertNil(set.nextPolicyRun(now: 0), "one link: nothing to choose")

        core.linkUp(2, now: 10)
        set.add(link(2, .ip, fast: true))
        set.apply(to: &core, now: 10)
        XCTAssertEqual(core.preferredLink, 1, "messages stay on Bluetooth")
        XCTAssertEqual(set.nextPolicyRun(now: 10), 10 + LinkSet.reevaluateAfter, "two links: looked at again")
        XCTAssertTrue(set.remove(1))
        XCTAssertFalse(set.remove(1), "a link's death is handled once")
    }

    func testASuspectedCarrierIsNamedInTheReason() {
        var set = LinkSet(policy: LinkPolicy(.wifiFirst))
        set.add(link(1, .bluetooth, fast: false))
        set.add(link(2, .ip, fast: true))
        var core = SessionCore(role: .initiator)
        core.linkUp(1, now: 0); core.linkUp(2, now: 0)
        set.apply(to: &core, now: 0)
        XCTAssertEqual(set.choice.carrier[.reliable], 2)
        set.suspected(2, silentFor: 180)
        XCTAssertEqual(set.reason(for: .reliable, on: 1).rule, .carrierSuspected(link: 2, silence: .milliseconds(180), movedTo: 1))
        XCTAssertEqual(set.reason(for: .reliable, on: 1).description,
                       "link 2: nothing acknowledged or answered for 180 ms with data in flight; moved to link 1 until it answers")
        set.recovered(2)
        XCTAssertNil(set.suspicion(of: 2))
    }

    func testBulkProposesAFasterLinkOnlyOverBluetoothAlone() {
        var set = LinkSet(policy: LinkPolicy(.bluetoothFirst))
        XCTAssertFalse(set.bulkWantsFasterLink(sharedMinor: 3), "no link at all")
        set.add(link(1, .bluetooth, fast: false))
        XCTAssertTrue(set.bulkWantsFasterLink(sharedMinor: 3))
        XCTAssertFalse(set.bulkWantsFasterLink(sharedMinor: 0), "a peer that cannot negotiate")
        set.add(link(2, .ip, fast: true))
        XCTAssertFalse(set.bulkWantsFasterLink(sharedMinor: 3), "a fast link is up already")
    }
}
