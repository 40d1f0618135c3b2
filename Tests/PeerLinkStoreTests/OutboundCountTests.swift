import Foundation
@testable import PeerLinkStore
import XCTest

/// `Ledger.counts(in:)`: items per peer and state, counted by SQLite.
final class OutboundCountTests: XCTestCase {
    let day = Duration.seconds(86_400)

    func testCountsPerPeerAndStateLeaveOutWhatHasNone() throws {
        let dir = scratchDirectory(self)
        let ledger = try Ledger(root: dir + "/l", now: at(0))
        XCTAssertEqual(try ledger.counts(in: Set(OutboundItem.State.allCases)), [], "an empty ledger counts nothing")
        for n: UInt8 in 1...3 { _ = try ledger.enqueue(id: itemID(n), for: bob, payload: .message([n]), ttl: day, now: at(0)) }
        _ = try ledger.enqueue(id: itemID(4), for: carol, payload: .message([4]), ttl: day, now: at(0))
        _ = try ledger.enqueue(id: itemID(5), for: carol, payload: .message([5]), ttl: day, now: at(0))
        _ = try ledger.recordProgress(itemID(1), acknowledged: 1)
        _ = try ledger.markFailed(itemID(5), reason: "refused", now: at(1))

        let pending = try ledger.counts(in: [.queued, .sending])
        XCTAssertEqual(Set(pending), [OutboundCount(peer: bob, state: .queued, count: 2),
                                      OutboundCount(peer: bob, state: .sending, count: 1),
                                      OutboundCount(peer: carol, state: .queued, count: 1)])
        XCTAssertEqual(try ledger.counts(in: [.failed]), [OutboundCount(peer: carol, state: .failed, count: 1)])
        XCTAssertEqual(try ledger.counts(in: []), [])
        // The same figures as loading every item and grouping them.
        let loaded = Dictionary(grouping: try ledger.items(in: Set(OutboundItem.State.allCases)), by: { "\($0.peer) \($0.state)" }).mapValues(\.count)
        let counted = Dictionary(uniqueKeysWithValues: try ledger.counts(in: Set(OutboundItem.State.allCases)).map { ("\($0.peer) \($0.state)", $0.count) })
        XCTAssertEqual(counted, loaded)
    }
}
