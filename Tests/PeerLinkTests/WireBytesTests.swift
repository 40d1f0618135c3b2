import Foundation
import TestKit
import XCTest
@testable import PeerLink

/// Bytes on the wire per link (`LinkSnapshot.wire`) and per medium (`Session.wireBytes()`).
final class WireBytesTests: XCTestCase {
    /// The only link of `session`'s only peer.
    func link(_ session: Session) async -> LinkSnapshot? { await session.links().first?.links.first }

    func testAKnownPayloadIsCountedOnBothSidesWithBoundedOverheadAndSurvivesTheLinkEnding() async throws {
        let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                        discovery: LoopbackDiscovery())
        let aHasB = await waitUntil(timeout: 5) { await p.sa.connectedPeers().contains(p.b.peerID) }
        XCTAssertTrue(aHasB, "A reports B connected")
        let beforeLink = await link(p.sb)
        let before = try XCTUnwrap(beforeLink?.wire, "a live link reports its bytes")
        XCTAssertGreaterThan(before.sent, 0, "the handshake crossed the wire")
        XCTAssertGreaterThan(before.received, 0, "the handshake crossed the wire")

        let payload = 1 << 20
        try await p.sb.send([UInt8](repeating: 0x5A, count: payload), to: [p.a.peerID])
        let got = try await waitFor(p.sa, "the 1 MiB message") { e -> Int? in
            if case let .message(_, b, .reliable) = e, b.count == payload { return b.count }; return nil
        }
        XCTAssertEqual(got, payload)

        // Read the receiver first: everything it counted, the sender had counted before.
        let receiverLink = await link(p.sa)
        let senderLink = await link(p.sb)
        let received = try XCTUnwrap(receiverLink?.wire?.received)
        let sent = try XCTUnwrap(senderLink?.wire?.sent)
        let overhead = UInt64(payload / 20 + 16 * 1024)  // tags, prefixes, record heads, keepalives
        XCTAssertGreaterThanOrEqual(received, UInt64(payload), "the receiver read at least the payload")
        XCTAssertGreaterThanOrEqual(sent, received, "the sender wrote all the receiver read")
        XCTAssertLessThan(sent - before.sent, UInt64(payload) + overhead, "framing overhead is bounded")
        let acks = try XCTUnwrap(receiverLink?.wire?.sent)
        XCTAssertLessThan(acks, UInt64(payload / 10), "the receiver only acknowledged")

        // The session's total per medium includes the link, and keeps it once the link ends.
        let live = try XCTUnwrap(p.sb.wireBytes()[.tcp])
        XCTAssertGreaterThanOrEqual(live.sent, sent)
        await p.sb.disconnect()
        let gone = await waitUntil(timeout: 10) { await p.sb.links().allSatisfy { $0.links.isEmpty } }
        XCTAssertTrue(gone, "B's link ended")
        let ended = try XCTUnwrap(p.sb.wireBytes()[.tcp], "an ended link still counts")
        XCTAssertGreaterThanOrEqual(ended.sent, live.sent, "the total never goes backwards")
        XCTAssertGreaterThanOrEqual(ended.received, live.received, "the total never goes backwards")
    }
}
