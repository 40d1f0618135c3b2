import XCTest
@testable import PeerLinkCore
import PeerLinkWire

/// Message copies on a second link (`LinkPolicy.copyMessages`): a carrier that goes silent
/// delays nothing, nothing is delivered twice, and the copies stay within their budget.
final class SessionCopyTests: XCTestCase {
    /// Links 1 (carrier) and 2 (copies when `copies`) between A and B.
    func pair(copies: Bool, budget: Int = 32 * 1024) -> SessionPair {
        var c = SessionConfig()
        c.messageCopyBytesPerSecond = budget
        let p = SessionPair(a: c, b: c)
        p.up(1)
        p.up(2)
        for side in [\SessionPair.a, \SessionPair.b] {
            p[keyPath: side].preferredLink = 1
            p[keyPath: side].preferredCopyLink = copies ? 2 : nil
        }
        return p
    }

    /// Sends one 64-byte message every 10 ms for 2 s and cuts link 1 silently after 0.5 s.
    /// Returns the longest time a sent message waited for its delivery.
    func streamAcrossSilentCut(_ p: SessionPair) throws -> UInt64 {
        var sentAt: [UInt64] = []
        var worst: UInt64 = 0
        for i in 0..<200 {
            if i == 50 { p.cut = [1] }
            try p.a.send(message(i, size: 64), reliable: true, now: p.now)
            sentAt.append(p.now)
            let before = p.reliableMessagesB.count
            p.advance(by: 10, step: 10)
            for j in before..<p.reliableMessagesB.count { worst = max(worst, p.now - sentAt[j]) }
        }
        p.advance(by: 1000, step: 10)
        XCTAssertEqual(p.reliableMessagesB, (0..<200).map { message($0, size: 64) }, "each message once, in order")
        return worst
    }

    func testCopiesHideASilentCarrierAndNothingArrivesTwice() throws {
        let p = pair(copies: true)
        let worst = try streamAcrossSilentCut(p)
        XCTAssertLessThanOrEqual(worst, 10, "every message arrived in the step it was sent, through the cut")
        let copies = p.sentByA.filter { if case .reliable = $0.frame { return $0.link == 2 }; return false }
        XCTAssertGreaterThanOrEqual(copies.count, 50, "link 2 got a copy of each message before the cut")
        // Acks that came back over the copy link do not vouch for the silent carrier: it is
        // never "recovered", and it is dropped at the keepalive bound; link 2 then carries
        // the messages and gets no copies of itself.
        XCTAssertFalse(p.eventsA.contains(.linkRecovered(1)), "no suspect/recover flapping from the copy link's acks")
        p.advance(by: p.a.config.deadAfterMillis, step: 50)
        XCTAssertTrue(p.eventsA.contains(.linkDead(1)))
        XCTAssertEqual(p.a.carrier(of: .main), 2)
        XCTAssertNil(p.a.copyLink)
        try p.a.send([9], reliable: true, now: p.now)
        p.advance(by: 100, step: 10)
        XCTAssertEqual(p.reliableMessagesB.last, [9])
        XCTAssertTrue(SessionPair.violations(p.eventsB).isEmpty)
    }

    /// The same stream without copies waits for the suspicion bound: the test above can fail.
    func testWithoutCopiesTheSameCutDelaysMessages() throws {
        let p = pair(copies: false)
        let worst = try streamAcrossSilentCut(p)
        XCTAssertGreaterThanOrEqual(worst, p.a.config.suspectAfterMillis)
        XCTAssertFalse(p.sentByA.contains { if case .reliable = $0.frame { return $0.link == 2 && $0.at < 500 }; return false },
                       "no copies on link 2 before the cut")
    }

    func testCopiesStayWithinTheirBudget() throws {
        let p = pair(copies: true, budget: 1000)
        p.advance(by: 2000, step: 100)  // a full bucket: 1000 bytes
        for i in 0..<100 { try p.a.send(message(i, size: 100), reliable: true, now: p.now) }
        p.settle()
        XCTAssertEqual(p.reliableMessagesB, (0..<100).map { message($0, size: 100) })
        let copied = p.sentByA.filter { if case .reliable = $0.frame { return $0.link == 2 }; return false }
        XCTAssertGreaterThan(copied.count, 0)
        XCTAssertLessThanOrEqual(copied.count * 111, 1000, "at most the budget of 1000 bytes was copied")
    }

    func testNoCopiesWhenTheBudgetIsZeroOrTheCopyLinkIsTheCarrier() throws {
        let p = pair(copies: true, budget: 0)
        XCTAssertNil(p.a.copyLink)
        p.a.copyBytesPerSecond = 1000
        XCTAssertEqual(p.a.copyLink, 2, "the policy's rate replaces the configured one")
        let q = pair(copies: true)
        q.a.preferredCopyLink = 1
        XCTAssertNil(q.a.copyLink, "the carrier does not copy onto itself")
        q.down(2)
        q.a.preferredCopyLink = 2
        XCTAssertNil(q.a.copyLink, "a link that is not live gets no copies")
        try q.a.send([1], reliable: true, now: q.now)
        q.settle()
        XCTAssertEqual(q.reliableMessagesB, [[1]])
    }
}
