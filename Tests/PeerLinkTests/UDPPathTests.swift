import Foundation
import XCTest
@testable import PeerLink

/// Unreliable messages over real UDP sockets on loopback, beside a TCP link.
final class UDPPathTests: XCTestCase {
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
        let got = await collector.value
        XCTAssertFalse(got.isEmpty, "loopback delivers datagrams")
        XCTAssertEqual(Set(got).count, got.count, "never duplicated")

        // A large unreliable message does not fit a datagram and goes over the link instead.
        let big = [UInt8](repeating: 7, count: 5000)
        try await p.sb.send(big, to: [p.a.peerID], mode: .unreliable)
        let back = try await waitFor(p.sa) { e -> Int? in if case let .message(_, b, .unreliable) = e, b.count == 5000 { return b.count }; return nil }
        XCTAssertEqual(back, 5000)
    }

    func testForgedDatagramsAreDroppedNotDelivered() async throws {
        let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                        discovery: LoopbackDiscovery())
        // B's view of A's datagram port.
        let bLinks = await p.sb.links()
        let datagram = try XCTUnwrap(bLinks.first?.links.first?.datagram)
        let port = try XCTUnwrap(UInt16(datagram.split(separator: ":").last ?? ""))
        let attacker = try UDPSocket(bindHost: "127.0.0.1")
        defer { attacker.close() }
        for _ in 0..<20 {
            attacker.send((0..<60).map { _ in UInt8.random(in: 0...255) }, to: "127.0.0.1", port: port)
            let env = DatagramEnvelope(token: (0..<8).map { _ in UInt8.random(in: 0...255) }, nonce: 1,
                                       ciphertext: [UInt8](repeating: 1, count: 40))
            attacker.send(env.encode(), to: "127.0.0.1", port: port)
        }
        let delivered = Task { () -> Bool in
            for await e in p.sa.events {
                if case let .message(_, b, _) = e { return b == Array("real".utf8) }
            }
            return false
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        try await p.sb.send(Array("real".utf8), to: [p.a.peerID], mode: .reliable)
        let firstWasReal = await delivered.value
        XCTAssertTrue(firstWasReal, "no forged datagram reached the application before the real message")
    }
}
