import XCTest
import PeerLinkWire
@testable import PeerLinkCore

/// The negotiation state machine alone: two instances wired back to back, with the edge's
/// results fed in by hand.
final class LinkUpgradeTests: XCTestCase {
    let both = LinkUpgrade.Availability(roles: [.host, .join])

    func sent(_ actions: [LinkUpgrade.Action]) -> [LinkSetup] {
        actions.compactMap { if case let .send(m) = $0 { return m }; return nil }
    }
    func events(_ actions: [LinkUpgrade.Action]) -> [UpgradeEvent.Step] {
        actions.compactMap { if case let .event(e) = $0 { return e.step }; return nil }
    }

    func pair() -> (LinkUpgrade, LinkUpgrade) {
        var a = LinkUpgrade(initiator: true), b = LinkUpgrade(initiator: false)
        a.setAvailability("wifi-direct", both)
        b.setAvailability("wifi-direct", both)
        return (a, b)
    }

    func testHappyPathProposerHostsJoinerDialsAndIdleTearsDown() {
        var (a, b) = pair()
        XCTAssertTrue(a.propose("wifi-direct", reason: "file", now: 0))
        XCTAssertFalse(a.propose("wifi-direct", reason: "again", now: 1), "one negotiation at a time")
        let propose = sent(a.takeActions())
        XCTAssertEqual(propose.map(\.step), [.propose])
        b.received(propose[0], now: 10)
        let answer = b.takeActions()
        let heard = answer.compactMap { if case let .event(e) = $0 { return e }; return nil }.first
        XCTAssertEqual(heard?.step, .receivedProposal)
        XCTAssertEqual(heard?.sinceLastStep, .zero, "the first step of the receiving side")
        XCTAssertEqual(sent(answer).map(\.step), [.accept])
        XCTAssertEqual(b.phase, .awaitingHost)
        XCTAssertTrue(answer.contains(.prepare(id: propose[0].id, medium: "wifi-direct")), "the joiner gets ready while the host forms")
        a.received(sent(answer)[0], now: 20)
        XCTAssertEqual(a.takeActions().filter { if case .host = $0 { return true }; return false }.count, 1)
        XCTAssertEqual(a.phase, .hosting)
        a.hosted(propose[0].id, parameters: [.init("ssid", string: "DIRECT-xy")], now: 1000)
        let ready = sent(a.takeActions())
        XCTAssertEqual(ready.map(\.step), [.ready])
        b.received(ready[0], now: 1010)
        let join = b.takeActions()
        let readyEvent = join.compactMap { if case let .event(e) = $0 { return e }; return nil }.first
        XCTAssertEqual(readyEvent?.step, .ready)
        XCTAssertEqual(readyEvent?.sinceLastStep, .seconds(1), "waiting for the host took from the acceptance (10 ms) to 1010 ms")
        XCTAssertEqual(readyEvent?.sinceProposal, .seconds(1))
        XCTAssertTrue(join.contains(.join(id: propose[0].id, medium: "wifi-direct", parameters: [.init("ssid", string: "DIRECT-xy")])))
        b.linkUp(propose[0].id, now: 2000)
        a.linkUp(propose[0].id, now: 2000)
        XCTAssertEqual(a.phase, .up)
        XCTAssertEqual(events(b.takeActions()), [.linkUp])
        _ = a.takeActions()
        a.bulkActivity(now: 30_000)
        a.tick(now: 89_999)
        XCTAssertEqual(a.phase, .up)
        a.tick(now: 90_000)
        let down = a.takeActions()
        XCTAssertEqual(sent(down).map(\.step), [.teardown])
        XCTAssertTrue(down.contains(.leave(id: propose[0].id, medium: "wifi-direct", reason: "no bulk traffic for 60 s")))
        b.received(sent(down)[0], now: 90_010)
        XCTAssertEqual(b.phase, .idle)
        XCTAssertTrue(b.takeActions().contains { if case .leave = $0 { return true }; return false }, "the joiner leaves too")
    }

    func testRolesFollowWhatEachSideCanDo() {
        var (a, b) = pair()
        a.setAvailability("wifi-direct", .init(roles: [.join]))
        b.setAvailability("wifi-direct", .init(roles: [.host]))
        a.propose("wifi-direct", reason: "", now: 0)
        b.received(sent(a.takeActions())[0], now: 0)
        let acts = b.takeActions()
        XCTAssertTrue(acts.contains(.host(id: 1, medium: "wifi-direct")), "the side that can only host hosts")
        XCTAssertEqual(sent(acts).first?.value("role"), [LinkUpgrade.Role.join.rawValue])

        var (c, d) = pair()
        c.setAvailability("wifi-direct", .init(roles: [.join]))
        d.setAvailability("wifi-direct", .init(roles: [.join]))
        c.propose("wifi-direct", reason: "", now: 0)
        d.received(sent(c.takeActions())[0], now: 0)
        let refusal = sent(d.takeActions())
        XCTAssertEqual(refusal.map(\.step), [.reject])
        XCTAssertEqual(refusal.first?.text, "no roles fit: the proposer can only join, this peer can only join")
        c.received(refusal[0], now: 5)
        XCTAssertEqual(c.phase, .idle)
        XCTAssertFalse(c.propose("wifi-direct", reason: "", now: 10), "not again right after a refusal")
        XCTAssertTrue(c.propose("wifi-direct", reason: "", now: 30_005))
    }

    /// Whichever side joins (the receiver of the proposal, or the proposer told to) is asked
    /// to get ready at once, and always hears `leave` for that id afterwards, even when the
    /// host never answers.
    func testTheJoinerPreparesAndIsAlwaysToldToLeave() {
        var (a, b) = pair()
        a.setAvailability("wifi-direct", .init(roles: [.join]))
        b.setAvailability("wifi-direct", .init(roles: [.host]))
        a.propose("wifi-direct", reason: "", now: 0)
        let proposal = sent(a.takeActions())[0]
        b.received(proposal, now: 0)
        let answer = b.takeActions()
        XCTAssertFalse(answer.contains { if case .prepare = $0 { return true }; return false }, "the host does not prepare to join")
        a.received(sent(answer)[0], now: 20)
        XCTAssertEqual(a.phase, .awaitingHost)
        XCTAssertTrue(a.takeActions().contains(.prepare(id: proposal.id, medium: "wifi-direct")), "the proposer, told to join, prepares")
        a.received(LinkSetup(id: proposal.id, step: .failed, medium: "wifi-direct", text: "no radio after all"), now: 500)
        let after = a.takeActions()
        XCTAssertTrue(after.contains { if case let .leave(id, _, _) = $0 { return id == proposal.id }; return false }, "\(after)")
        XCTAssertEqual(a.phase, .idle)
    }

    /// A side that cannot use the medium proposes nothing, and its timeline says why once
    /// per reason (bulk traffic starts often).
    func testASideThatCannotSaysWhyItProposedNothing() {
        var a = LinkUpgrade(initiator: true)
        XCTAssertFalse(a.propose("wifi-direct", reason: "file", now: 0))
        XCTAssertTrue(a.takeActions().isEmpty, "availability not known yet: nothing to say")
        a.setAvailability("wifi-direct", LinkUpgrade.Availability(roles: [], reason: "wlan0 is driven by another wpa_supplicant"))
        XCTAssertFalse(a.propose("wifi-direct", reason: "sending 'a.bin' (1.0 MiB)", now: 5))
        let told = a.takeActions()
        XCTAssertTrue(sent(told).isEmpty, "nothing goes to the peer")
        let e = told.compactMap { if case let .event(e) = $0 { return e }; return nil }
        XCTAssertEqual(e.map(\.step), [.unavailable])
        XCTAssertEqual(e.first?.detail, "not proposed for sending 'a.bin' (1.0 MiB): wlan0 is driven by another wpa_supplicant")
        XCTAssertEqual(e.first?.medium, "wifi-direct")
        XCTAssertEqual(e.first?.id, 0)
        XCTAssertEqual(e.first?.sinceProposal, .zero, "no negotiation to time")
        XCTAssertEqual(a.phase, .idle)
        XCTAssertFalse(a.propose("wifi-direct", reason: "sending 'b.bin'", now: 10))
        XCTAssertTrue(a.takeActions().isEmpty, "said once")
        a.setAvailability("wifi-direct", LinkUpgrade.Availability(roles: [], reason: "no radio"))
        XCTAssertFalse(a.propose("wifi-direct", reason: "sending 'c.bin'", now: 20))
        XCTAssertEqual(events(a.takeActions()), [.unavailable], "a new reason is told")
        a.setAvailability("wifi-direct", both)
        XCTAssertTrue(a.propose("wifi-direct", reason: "sending 'd.bin'", now: 30))
        XCTAssertEqual(events(a.takeActions()), [.proposed])
    }

    func testCrossedProposalsTheInitiatorsGoesAhead() {
        var (a, b) = pair()
        a.propose("wifi-direct", reason: "", now: 0)
        b.propose("wifi-direct", reason: "", now: 0)
        let fromA = sent(a.takeActions())[0], fromB = sent(b.takeActions())[0]
        XCTAssertNotEqual(fromA.id, fromB.id, "ids of the two sides never collide")
        a.received(fromB, now: 5)
        b.received(fromA, now: 5)
        let aOut = sent(a.takeActions()), bOut = sent(b.takeActions())
        XCTAssertEqual(aOut.map(\.step), [.reject])
        XCTAssertEqual(bOut.map(\.step), [.accept])
        b.received(aOut[0], now: 6)  // the refusal of b's own, dropped proposal: ignored
        XCTAssertEqual(b.phase, .awaitingHost)
        a.received(bOut[0], now: 6)
        XCTAssertEqual(a.phase, .hosting)
    }

    func testHostileOrStaleMessagesChangeNothing() {
        var (a, b) = pair()
        // Steps for negotiations that do not exist.
        for step in [LinkSetup.Step.accept, .reject, .ready, .failed, .teardown] {
            b.received(LinkSetup(id: 77, step: step, medium: "wifi-direct"), now: 0)
        }
        XCTAssertEqual(b.phase, .idle)
        XCTAssertTrue(b.takeActions().isEmpty)
        // A proposal for a medium this side does not have, and one with no roles.
        b.received(LinkSetup(id: 1, step: .propose, medium: "carrier-pigeon", parameters: [.init("roles", [3])]), now: 0)
        b.received(LinkSetup(id: 3, step: .propose, medium: "wifi-direct"), now: 0)
        XCTAssertEqual(sent(b.takeActions()).map(\.text), ["this peer cannot use carrier-pigeon", "the proposal names no roles"])
        XCTAssertEqual(b.phase, .idle)
        // An acceptance naming a role that does not exist fails the negotiation cleanly.
        a.propose("wifi-direct", reason: "", now: 0)
        _ = a.takeActions()
        a.received(LinkSetup(id: 1, step: .accept, medium: "wifi-direct", parameters: [.init("role", [9])]), now: 1)
        XCTAssertEqual(a.phase, .idle)
        XCTAssertEqual(sent(a.takeActions()).map(\.step), [.failed])
    }

    func testTimeoutsEndANegotiationThatStalls() {
        var (a, b) = pair()
        a.propose("wifi-direct", reason: "", now: 0)
        _ = a.takeActions()
        a.tick(now: 9_999)
        XCTAssertEqual(a.phase, .proposed)
        a.tick(now: 10_000)
        XCTAssertEqual(a.phase, .idle)
        XCTAssertEqual(events(a.takeActions()), [.failed])

        b.received(LinkSetup(id: 1, step: .propose, medium: "wifi-direct", parameters: [.init("roles", [3])]), now: 0)
        _ = b.takeActions()
        XCTAssertEqual(b.phase, .awaitingHost)
        b.tick(now: 60_000)
        let acts = b.takeActions()
        XCTAssertEqual(sent(acts).map(\.step), [.failed])
        XCTAssertTrue(sent(acts)[0].text.contains("waiting for the host"), sent(acts)[0].text)
        XCTAssertTrue(acts.contains { if case .leave = $0 { return true }; return false })
    }

    func testTheLinkDyingTakesTheSetUpDownAndAllowsANewOneAtOnce() {
        var (a, b) = pair()
        a.propose("wifi-direct", reason: "", now: 0)
        b.received(sent(a.takeActions())[0], now: 0)
        a.received(sent(b.takeActions())[0], now: 0)
        a.hosted(1, parameters: [], now: 0)
        _ = a.takeActions()
        a.linkUp(1, now: 0)
        a.linkDown(1, reason: "closed", now: 100)
        let acts = a.takeActions()
        XCTAssertEqual(sent(acts).map(\.step), [.teardown])
        XCTAssertEqual(events(acts), [.linkUp, .tornDown])
        XCTAssertTrue(a.propose("wifi-direct", reason: "", now: 101))
    }
}
