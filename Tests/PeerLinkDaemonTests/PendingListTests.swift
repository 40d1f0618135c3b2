import PeerLink
import XCTest
@testable import PeerLinkDaemon

/// The pending list on its own, driven by `now:`: invitations lapse at their own timeout,
/// repeat asks replace the waiting invitation, answers after a lapse, forgetting, names.
final class PendingListTests: XCTestCase {
    let alpha = PeerID(digest: Array(repeating: 1, count: 32))
    let beta = PeerID(digest: Array(repeating: 2, count: 32))

    func testAnInvitationWaitsForItsTimeoutThenLapsesAndIsReturnedToDecline() {
        var list = PendingList<Int>()
        let r = list.ask(peer: alpha, name: "alpha", context: "send 1 file(s)", timeout: 30, ticket: 1, now: 100, wall: 5000)
        XCTAssertTrue(r.isNew)
        XCTAssertNil(r.superseded)
        XCTAssertEqual(list.nextExpiry, 130)
        XCTAssertEqual(list.expire(now: 129.9), [])
        let listed = list.list(now: 110)
        XCTAssertEqual(listed.count, 1)
        XCTAssertEqual(listed[0].secondsLeft, 20)
        XCTAssertEqual(listed[0].context, "send 1 file(s)")
        XCTAssertTrue(listed[0].waiting)
        XCTAssertEqual(list.expire(now: 130), [1], "lapsed at its timeout: the caller declines it")
        XCTAssertEqual(list.expire(now: 131), [], "returned once")
        let after = list.list(now: 131)
        XCTAssertEqual(after.map(\.peer), [alpha], "still listed, so the owner can trust it")
        XCTAssertFalse(after[0].waiting)
        XCTAssertNil(after[0].secondsLeft)
        XCTAssertNil(list.nextExpiry)
    }

    func testATimeoutIsCappedAtFiveMinutes() {
        var list = PendingList<Int>()
        _ = list.ask(peer: alpha, name: "alpha", context: "", timeout: 3600, ticket: 1, now: 0, wall: 0)
        XCTAssertEqual(list.nextExpiry, 300)
    }

    func testARepeatAskReplacesTheWaitingInvitationAndCounts() {
        var list = PendingList<Int>()
        _ = list.ask(peer: alpha, name: "alpha", context: "", timeout: 30, ticket: 1, now: 0, wall: 1000)
        let again = list.ask(peer: alpha, name: "alpha-2", context: "hi", timeout: 30, ticket: 2, now: 10, wall: 11000)
        XCTAssertFalse(again.isNew)
        XCTAssertEqual(again.superseded, 1, "the earlier invitation is handed back to decline")
        let e = list.list(now: 10)[0]
        XCTAssertEqual(e.timesAsked, 2)
        XCTAssertEqual(e.firstAsked, 1000)
        XCTAssertEqual(e.lastAsked, 11000)
        XCTAssertEqual(e.name, "alpha-2")
        XCTAssertEqual(list.expire(now: 30), [], "the latest invitation's timeout counts")
        XCTAssertEqual(list.expire(now: 40), [2])
        // Asked again after the lapse: waiting again, not new.
        let third = list.ask(peer: alpha, name: "alpha", context: "", timeout: 30, ticket: 3, now: 50, wall: 51000)
        XCTAssertFalse(third.isNew)
        XCTAssertNil(third.superseded)
        XCTAssertEqual(list.list(now: 50)[0].timesAsked, 3)
    }

    func testAnAnswerTakesThePeerOffTheListWithItsWaitingInvitation() {
        var list = PendingList<Int>()
        _ = list.ask(peer: alpha, name: "alpha", context: "", timeout: 30, ticket: 7, now: 0, wall: 0)
        _ = list.ask(peer: beta, name: "beta", context: "", timeout: 5, ticket: 8, now: 0, wall: 1)
        let (answer, lapsed) = list.answer(alpha, now: 10)
        guard case let .waiting(e, ticket) = answer else { return XCTFail("\(answer)") }
        XCTAssertEqual(e.peer, alpha)
        XCTAssertEqual(ticket, 7)
        XCTAssertEqual(lapsed, [8], "what lapsed meanwhile is handed back too")
        XCTAssertEqual(list.list(now: 10).map(\.peer), [beta])
        guard case .unknown = list.answer(alpha, now: 11).answer else { return XCTFail("answered twice") }
    }

    func testAnAnswerAfterTheInvitationLapsedFindsThePeerButNoInvitation() {
        var list = PendingList<Int>()
        _ = list.ask(peer: alpha, name: "alpha", context: "", timeout: 30, ticket: 7, now: 0, wall: 0)
        let (answer, lapsed) = list.answer(alpha, now: 45)
        guard case let .lapsed(e) = answer else { return XCTFail("\(answer)") }
        XCTAssertEqual(e.peer, alpha)
        XCTAssertEqual(lapsed, [7], "declined by the caller, not answered")
        XCTAssertTrue(list.list(now: 45).isEmpty)
    }

    func testAPeerThatStopsAskingIsForgottenAfterTheMemory() {
        var list = PendingList<Int>(memory: 600)
        _ = list.ask(peer: alpha, name: "alpha", context: "", timeout: 30, ticket: 1, now: 0, wall: 0)
        _ = list.expire(now: 599)
        XCTAssertEqual(list.list(now: 599).count, 1)
        _ = list.expire(now: 600)
        XCTAssertTrue(list.list(now: 600).isEmpty)
    }

    func testTheListHasACapacityForNewPeersButNotForRepeatAsks() {
        var list = PendingList<Int>(capacity: 1)
        XCTAssertTrue(list.hasRoom(for: alpha))
        _ = list.ask(peer: alpha, name: "alpha", context: "", timeout: 30, ticket: 1, now: 0, wall: 0)
        XCTAssertTrue(list.hasRoom(for: alpha), "a listed peer may ask again")
        XCTAssertFalse(list.hasRoom(for: beta))
        _ = list.answer(alpha, now: 1)
        XCTAssertTrue(list.hasRoom(for: beta))
    }

    func testPeersAreNamedByIDPrefixOrDisplayName() {
        var list = PendingList<Int>()
        _ = list.ask(peer: alpha, name: "laptop", context: "", timeout: 30, ticket: 1, now: 0, wall: 0)
        _ = list.ask(peer: beta, name: "laptop", context: "", timeout: 30, ticket: 2, now: 0, wall: 1)
        XCTAssertEqual(try list.resolve(alpha.description.uppercased()).get(), alpha)
        XCTAssertEqual(try list.resolve(String(beta.description.prefix(6))).get(), beta)
        guard case .failure(.ambiguous) = list.resolve("laptop") else { return XCTFail("two peers are called laptop") }
        guard case let .failure(e) = list.resolve("desk") else { return XCTFail("no peer is called desk") }
        XCTAssertTrue(e.description.contains("no pending peer 'desk'; pending: laptop ["), e.description)
    }
}
