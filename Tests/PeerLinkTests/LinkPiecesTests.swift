import Foundation
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth
import PeerLinkWire

/// Frames are sized per link when they are sent (PROTOCOL §6.3): a small-MTU link in the
/// session does not shrink the frames of a fast one, and what it carries after a handover
/// arrives in pieces that fit it, nothing lost.
final class LinkPiecesTests: XCTestCase {
    func testASmallLinkDoesNotShrinkTheFastLinksFramesAndCarriesPiecesAfterAHandover() async throws {
        // "Bluetooth" takes messages of at most 1100 bytes (a small L2CAP MTU; hellos ask for at
        // least 1024), "Wi-Fi" any size. Wi-Fi comes up first (it carries), then the small link
        // joins: with the old rule its size stuck for the rest of the session.
        let p = try await twoLinkPair(policy: LinkPolicy(.wifiFirst), order: [.tcp, .l2cap], bluetooth: .l2cap,
                                      conditions: ["a-bt": MemoryLinkConditions(maxMessage: 1100)])
        let (net, a, sa, sb) = (p.net, p.a, p.sa, p.sb)
        let peers = await sb.links()
        XCTAssertEqual(peers.first?.links.count, 2)

        let total = 40, size = 100_000
        @Sendable func message(_ i: Int) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ i &* 7) } }
        let arrivals = Arrivals<Int>()
        let receiver = Task { () -> [Int] in
            for await e in sa.events {
                if case let .message(_, bytes, .reliable) = e {
                    let i = arrivals.values.count
                    if arrivals.append(bytes == message(i) ? i : -1) == total { break }
                }
            }
            return arrivals.values
        }
        try await within(60, "sending \(total) messages of 100 kB") {
            for i in 0..<total {
                if i == total / 2 {
                    // What the Wi-Fi link carried so far: whole 16 KiB fragments, not ~1 KiB ones.
                    let ipLargest = net.connections(to: "a-ip").map(\.sendStats.largest).max() ?? 0
                    XCTAssertGreaterThan(ipLargest, 16_000, "the fast link's frames are not cut to the small link's size")
                    net.drop("a-ip")  // Wi-Fi goes away with records in flight
                }
                try await sb.send(message(i), to: [a.peerID])
            }
        }
        let got = try await within(60, "\(total) messages of 100 kB", progress: { arrivals.summary(of: total) }) { await receiver.value }
        XCTAssertEqual(got, Array(0..<total), "every message once, intact, in order, across the handover")
        let bt = net.connections(to: "a-bt")
        XCTAssertEqual(bt.count, 2, "the small link stayed up")
        XCTAssertEqual(bt.map(\.sendStats.oversized), [0, 0], "nothing larger than the small link takes was sent on it")
        XCTAssertGreaterThan(bt.map(\.sendStats.largest).max() ?? 0, 1000, "it carried pieces of the big frames")
        let after = await sb.links()
        XCTAssertEqual(after.first?.links.map(\.medium), [.l2cap])
        await sb.disconnect()
        await sa.disconnect()
    }

    /// While every link of the session is fast the session cuts frame-sized fragments; a
    /// Bluetooth link joining brings them back to 16 KiB (a small message never waits behind
    /// a large piece there), and its going restores them.
    func testFragmentsAreFrameSizedOnlyWhileEveryLinkIsFast() async throws {
        let p = try await twoLinkPair(policy: LinkPolicy(.wifiFirst), order: [.tcp], bluetooth: .rfcomm)
        let (net, a, b, sa, sb) = (p.net, p.a, p.b, p.sa, p.sb)
        let large = SessionConfig().fastFragmentSize, small = SessionConfig().fragmentSize
        let first = await sb.fragmentSizes(for: a.peerID)?.messages
        XCTAssertEqual(first, large)
        async let received = collect(2, "200 kB messages", from: sa, within: 30) { e -> Int? in
            if case let .message(_, bytes, _) = e { return bytes.count }; return nil
        }
        try await sb.send([UInt8](repeating: 7, count: 200_000), to: [a.peerID])
        let ipLargest = net.connections(to: "a-ip").map(\.sendStats.largest).max() ?? 0
        XCTAssertGreaterThan(ipLargest, 60_000, "the Wi-Fi link carried frame-sized fragments")

        let viaBT = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:],
                             endpoints: [TransportEndpoint(medium: .rfcomm, host: "a-bt", port: 0)])
        try await b.invite(viaBT, to: sb, timeout: .seconds(5))
        let withBluetooth = await sb.fragmentSizes(for: a.peerID)?.messages
        XCTAssertEqual(withBluetooth, small)
        try await sb.send([UInt8](repeating: 8, count: 200_000), to: [a.peerID])
        let sizes = try await received
        XCTAssertEqual(sizes, [200_000, 200_000])

        net.drop("a-bt")
        let restored = await waitUntil(timeout: 10) { await sb.fragmentSizes(for: a.peerID)?.messages == large }
        XCTAssertTrue(restored, "with the Bluetooth link gone the fragments are frame-sized again")
        await sb.disconnect()
        await sa.disconnect()
    }

    /// Two secure links over one in-memory connection that takes messages of at most 1100
    /// bytes; `minor` is the protocol minor the receiving side announces.
    func securePair(receiverMinor: UInt8) async throws -> (sender: SecureLink, receiver: SecureLink, conn: MemoryConnection) {
        let net = MemoryNetwork()
        net.conditions = ["r": MemoryLinkConditions(maxMessage: 1100)]
        let accepted = AsyncStream<MessageConnection>.makeStream()
        try net.register("r") { accepted.continuation.yield($0) }
        let client = try net.connect(from: "s", to: "r")
        guard let server = try await within(10, "the memory listener accepting", { () -> MessageConnection? in
            var it = accepted.stream.makeAsyncIterator()
            return await it.next()
        }) else { throw TransportError.closed }
        let sid = Identity(), rid = Identity()
        let s = Task { try await SecureLink.establish(over: client, initiator: true, identity: sid,
                                                      hello: Hello(displayName: "s", sessionToken: [UInt8](repeating: 1, count: 16))) }
        let r = Task { try await SecureLink.establish(over: server, initiator: false, identity: rid,
                                                      hello: Hello(displayName: "r", maxFrame: 1084, sessionToken: [UInt8](repeating: 2, count: 16),
                                                                   minor: receiverMinor)) }
        guard let conn = client as? MemoryConnection else { throw TransportError.closed }
        let (sl, rl) = try await within(20, "both secure handshakes") { (try await s.value, try await r.value) }
        return (sl, rl, conn)
    }

    func testAFrameLargerThanTheLinkTakesArrivesWholeFromPieces() async throws {
        let (s, r, conn) = try await securePair(receiverMinor: UInt8(PeerLinkProtocol.minor))
        XCTAssertEqual(s.pieceLimit, 1084)
        let big = Frame.unreliable(payload: (0..<20_000).map { UInt8(truncatingIfNeeded: $0) })
        s.send(big)
        s.send(.ping(token: 7))
        let got = try await within(10, "the 20 kB frame in pieces and the ping") { () -> [Frame] in
            var got: [Frame] = []
            while got.count < 2, let batch = try await r.receiveBatch() { got += batch }
            return got
        }
        XCTAssertEqual(got, [big, .ping(token: 7)])
        XCTAssertEqual(conn.sendStats.oversized, 0)
        XCTAssertLessThanOrEqual(conn.sendStats.largest, 1100)
    }

    func testAPeerBeforeMinor2GetsWholeFramesOnly() async throws {
        let (s, _, _) = try await securePair(receiverMinor: 1)
        XCTAssertNil(s.pieceLimit, "a minor-1 peer cannot join pieces: the session cuts frames to its size instead")
    }
}
