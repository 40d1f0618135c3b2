import XCTest
import PeerLinkWire
@testable import PeerLinkCore

/// Every decision about an incoming link, without a socket.
final class InvitationDeskTests: XCTestCase {
    let small = PeerID(publicKey: [1] + [UInt8](repeating: 0, count: 31))
    let large = PeerID(publicKey: [2] + [UInt8](repeating: 0, count: 31))
    let token: [UInt8] = Array(repeating: 7, count: 16)
    func invite(_ millis: UInt32 = 30_000) -> Frame { .invite(id: 1, timeoutMillis: millis, context: []) }

    func testABrowsersProbeAndOtherFirstFrames() {
        var desk = InvitationDesk(maxPending: 2)
        let c = InvitationDesk.Context(localPeer: small, remotePeer: large, remoteToken: token)
        XCTAssertEqual(desk.decide(first: .close(reason: .leaving, text: ""), c), .closeQuietly)
        XCTAssertEqual(desk.decide(first: .ping(token: 1), c), .refuse("expected an invitation"))
        XCTAssertEqual(desk.decide(first: .reliable(seq: 1, record: .messagePart(final: true, bytes: [1])), c), .refuse("expected an invitation"))
        XCTAssertEqual(desk.pending, 0)
    }

    func testLinksOfAPeerInASessionJoinWithoutAsking() {
        var desk = InvitationDesk(maxPending: 2)
        var c = InvitationDesk.Context(localPeer: small, remotePeer: large, remoteToken: token, inSessionWithSameIncarnation: true)
        XCTAssertEqual(desk.decide(first: invite(), c), .join)
        // The first link is accepted and still joining: a second of the same incarnation waits…
        c.inSessionWithSameIncarnation = false
        c.joiningToken = token
        XCTAssertEqual(desk.decide(first: invite(), c), .waitForFirstLink)
        // …but one of another incarnation (the peer restarted) does not.
        c.joiningToken = [UInt8](repeating: 9, count: 16)
        XCTAssertEqual(desk.decide(first: invite(), c), .ask(seconds: 30))
    }

    func testCrossedInvitationsEndInOneSession() {
        var deskOfSmall = InvitationDesk(maxPending: 2), deskOfLarge = InvitationDesk(maxPending: 2)
        // Each node is inviting the other when the other's invitation arrives.
        let atSmall = InvitationDesk.Context(localPeer: small, remotePeer: large, remoteToken: token, inviting: true)
        let atLarge = InvitationDesk.Context(localPeer: large, remotePeer: small, remoteToken: token, inviting: true)
        XCTAssertEqual(deskOfSmall.decide(first: invite(), atSmall), .crossed, "the smaller peer ID's invitation wins")
        XCTAssertEqual(deskOfLarge.decide(first: invite(), atLarge), .acceptIntoInvitingSession)
        XCTAssertEqual(deskOfSmall.pending + deskOfLarge.pending, 0, "nobody was asked")
    }

    func testDeclinedWithoutAnAdvertiserOrPastTheLimit() {
        var desk = InvitationDesk(maxPending: 2)
        var c = InvitationDesk.Context(localPeer: small, remotePeer: large, remoteToken: token, hasHandler: false)
        guard case .decline = desk.decide(first: invite(), c) else { return XCTFail("no advertiser: not declined") }
        c.hasHandler = true
        XCTAssertEqual(desk.decide(first: invite(), c), .ask(seconds: 30))
        XCTAssertEqual(desk.decide(first: invite(), c), .ask(seconds: 30))
        XCTAssertEqual(desk.decide(first: invite(), c), .decline("2 invitations already wait for an answer"))
        desk.answered()
        XCTAssertEqual(desk.decide(first: invite(), c), .ask(seconds: 30), "an answer frees a place")
    }

    func testTheApplicationGetsOneToThreeHundredSeconds() {
        XCTAssertEqual(InvitationDesk.answerSeconds(timeoutMillis: 0), 1)
        XCTAssertEqual(InvitationDesk.answerSeconds(timeoutMillis: 2500), 2.5)
        XCTAssertEqual(InvitationDesk.answerSeconds(timeoutMillis: .max), 300)
    }
}
