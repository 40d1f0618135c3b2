import Foundation
import PeerLinkWire
import TestKit
import XCTest
@testable import PeerLink

/// Unreliable messages over real UDP sockets on loopback, beside a TCP link.
final class UDPPathTests: XCTestCase {
    /// The datagram counts of `session`'s only link.
    func counts(_ session: Session) async -> DatagramCounts? {
        await session.links().first?.links.first?.datagrams
    }

    func testUnreliableMessagesTakeTheUDPPath() async throws {
        let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                        discovery: LoopbackDiscovery())
        let links = await p.sb.links()
        let datagram = try XCTUnwrap(links.first?.links.first?.datagram, "both nodes offer UDP, so the link has a datagram path")
        XCTAssertTrue(datagram.hasPrefix("udp://127.0.0.1:"), datagram)
        // `invite` returns on B's side; datagrams land once A too has the link (and its UDP path).
        let aHasB = await waitUntil(timeout: 5) { await p.sa.connectedPeers().contains(p.b.peerID) }
        XCTAssertTrue(aHasB, "A reports B connected")

        let collector = Task { () -> [Int] in
            var got: [Int] = []
            for await e in p.sa.events {
                if case let .message(_, b, .unreliable) = e { got.append(Int(b[0])) }
                if case let .message(_, b, .reliable) = e, b == [0xFF] { break }
            }
            return got
        }
        for i in 0..<50 { try await p.sb.send([UInt8(i)], to: [p.a.peerID], mode: .unreliable) }
        try await Task.sleep(nanoseconds: 200_000_000)
        try await p.sb.send([0xFF], to: [p.a.peerID], mode: .reliable)
        let got = try await within(10, "the reliable message behind the datagrams") { await collector.value }
        XCTAssertFalse(got.isEmpty, "loopback delivers datagrams")
        XCTAssertEqual(Set(got).count, got.count, "never duplicated")
        // They crossed UDP, not the TCP link: B sent all 50 as datagrams, and A received as
        // many authenticated datagrams as it delivered unreliable messages.
        let sent = await counts(p.sb), received = await counts(p.sa)
        XCTAssertEqual(sent?.sent, 50, "every small unreliable message left as a datagram")
        XCTAssertEqual(received?.delivered, got.count, "each delivered unreliable message came in a datagram")
        XCTAssertEqual(received?.refused, 0)

        // A large unreliable message does not fit a datagram and goes over the link instead.
        let big = [UInt8](repeating: 7, count: 5000)
        try await p.sb.send(big, to: [p.a.peerID], mode: .unreliable)
        let back = try await waitFor(p.sa, "the 5000-byte unreliable message") { e -> Int? in
            if case let .message(_, b, .unreliable) = e, b.count == 5000 { return b.count }; return nil
        }
        XCTAssertEqual(back, 5000)
        let after = await counts(p.sb)
        XCTAssertEqual(after?.sent, 50, "the large one went on the link, not as a datagram")
    }

    func testForgedDatagramsAreDroppedNotDelivered() async throws {
        let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                        discovery: LoopbackDiscovery())
        let aHasB = await waitUntil(timeout: 5) { await p.sa.connectedPeers().contains(p.b.peerID) }
        XCTAssertTrue(aHasB, "A reports B connected")
        // B's view of A's datagram port, and the token B's datagrams to A carry.
        let bLinks = await p.sb.links()
        let datagram = try XCTUnwrap(bLinks.first?.links.first?.datagram)
        let port = try XCTUnwrap(UInt16(datagram.split(separator: ":").last ?? ""))
        let channel = try XCTUnwrap(p.sb.registry.channel(for: p.a.peerID))
        let bLinkToA = await channel.links.values.first
        let token = try XCTUnwrap(bLinkToA?.datagramSendToken)
        let attacker = try UDPSocket(bindHost: "127.0.0.1")
        defer { attacker.close() }
        var rng = seededGenerator(self)
        func junk(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        // What a forger would like A to deliver: a well-formed unreliable frame, sent in the
        // clear with a made-up tag.
        let forged = Frame.unreliable(payload: Array("forged".utf8)).encode()
        for i in 0..<20 {
            // Noise, an envelope for no path, and one with the path's real token whose tag is wrong.
            attacker.send(junk(60), to: "127.0.0.1", port: port)
            attacker.send(DatagramEnvelope(token: junk(8), nonce: 1, ciphertext: junk(40)).encode(), to: "127.0.0.1", port: port)
            attacker.send(DatagramEnvelope(token: token, nonce: UInt64(1000 + i), ciphertext: forged + junk(16)).encode(), to: "127.0.0.1", port: port)
        }
        // The 20 forgeries with the right token reach A's link and are refused there.
        let refused = await waitUntil(timeout: 10) { await self.counts(p.sa)?.refused == 20 }
        let seen = await counts(p.sa)
        XCTAssertTrue(refused, "A's link refused the 20 datagrams with its token and a bad tag: \(String(describing: seen))")
        XCTAssertEqual(seen?.delivered, 0, "none was delivered")
        // Nothing forged reached the application: the first message it gets is the real one,
        // and a real datagram still gets through after them.
        try await p.sb.send(Array("real".utf8), to: [p.a.peerID], mode: .reliable)
        let first = try await waitFor(p.sa, "the real message") { e -> [UInt8]? in if case let .message(_, b, _) = e { return b }; return nil }
        XCTAssertEqual(first, Array("real".utf8), "no forged datagram reached the application before the real message")
        try await p.sb.send([42], to: [p.a.peerID], mode: .unreliable)
        let real = try await waitFor(p.sa, "a real datagram after the forgeries") { e -> [UInt8]? in
            if case let .message(_, b, .unreliable) = e { return b }; return nil
        }
        XCTAssertEqual(real, [42])
        let final = await counts(p.sa)
        XCTAssertEqual(final?.delivered, 1)
    }

    /// A socket closed while links still send on it sends nothing: its descriptor number may
    /// already be another socket's. Here the next socket opened takes the same number, and a
    /// send on the closed one must not come out of it.
    func testASendAfterCloseGoesNowhere() throws {
        let old = try UDPSocket(bindHost: "127.0.0.1")
        let number = old.fd
        old.close()
        let next = try UDPSocket(bindHost: "127.0.0.1")
        defer { next.close() }
        guard next.fd == number else { throw XCTSkip("the kernel gave the next socket another number (\(next.fd), not \(number))") }
        let before = next.droppedCount
        old.send(Array(repeating: 0xAB, count: 40), to: "127.0.0.1", port: next.port)  // would reach `next` through its own fd
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(next.droppedCount, before, "a datagram went out through the closed socket's number")
    }
}
