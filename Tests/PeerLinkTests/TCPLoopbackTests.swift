import Foundation
import TestKit
import XCTest
@testable import PeerLink

/// Real TCP sockets on loopback: handshake, invitation, messages, files, hostile input.
final class TCPLoopbackTests: XCTestCase {
    func loopbackPair(config: SessionConfig = SessionConfig()) async throws -> Pair {
        let disc = LoopbackDiscovery()
        return try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                       discovery: disc, config: config)
    }

    func testMessagesAndFileOverTCP() async throws {
        let p = try await loopbackPair()
        let links = await p.sb.links()
        XCTAssertEqual(links.first?.links.first?.medium, .tcp)
        XCTAssertEqual(links.first?.peer, p.a.peerID)
        try await p.sb.send(Array("over tcp".utf8), to: [p.a.peerID])
        let got = try await waitFor(p.sa, "the message over TCP") { e -> String? in
            if case let .message(_, b, _) = e { return String(decoding: b, as: UTF8.self) }; return nil
        }
        XCTAssertEqual(got, "over tcp")

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-tcp-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var rng = seededGenerator(self)
        let content = Data((0..<(2 * 1024 * 1024)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        try content.write(to: URL(fileURLWithPath: dir + "/blob.bin"))
        Task { for await e in p.sa.events { if case let .resourceOffered(o) = e { try await p.sa.accept(o, into: dir + "/in") } } }
        try await within(60, "the 2 MiB file sent over TCP") { try await p.sb.sendResource(at: dir + "/blob.bin", to: p.a.peerID) }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/in/blob.bin")), content)
    }

    func testGarbageBeforeHandshakeIsRejectedAndNodeKeepsWorking() async throws {
        // A handshake timeout far beyond the waits below: a connection that ends within them
        // was closed for its bytes, not for taking too long.
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [TCPTransport(bindHost: "127.0.0.1")], handshakeTimeout: .seconds(60))
        let ports = try await a.start()
        let port = try XCTUnwrap(ports[.tcp])
        // Hostile client: a length prefix announcing 300 bytes of junk, then random bytes.
        let conn = try await TCPTransport().connect(to: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port), timeout: .seconds(2))
        var rng = seededGenerator(self)
        conn.enqueue((0..<300).map { _ in UInt8.random(in: 0...255, using: &rng) })
        let reply = try await within(10, "the node answering junk") { try? await conn.receive() }
        XCTAssertNil(reply ?? nil, "a node answers junk by closing the connection")
        conn.close()
        let first = await waitUntil(timeout: 10) { a.incomingOutcomes.all.count == 1 }
        XCTAssertTrue(first)
        XCTAssertEqual(a.incomingOutcomes.all, [.handshakeFailed("secure handshake failed: handshake message 1 must have an empty payload")],
                       "closed for what it sent, not for a timeout")
        // A zero-length prefix is malformed too.
        let rawConnection = try await TCPTransport().connect(to: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port), timeout: .seconds(2))
        let raw = try XCTUnwrap(rawConnection as? FDConnection)
        let plain = FDConnection(fd: dup(raw.fd), medium: .tcp, remoteDescription: "raw", lengthPrefixed: false)
        plain.enqueue([0, 0, 1, 2, 3])
        let r2 = try await within(10, "the node answering a zero-length message") { try? await plain.receive() }
        XCTAssertNil(r2 ?? nil)
        plain.close(); raw.close()
        let second = await waitUntil(timeout: 10) { a.incomingOutcomes.all.count == 2 }
        XCTAssertTrue(second)
        let why = a.incomingOutcomes.all.last.map { "\($0)" } ?? ""
        XCTAssertFalse(why.contains("timed out"), why)
        XCTAssertTrue(why.contains("handshakeFailed"), why)
        // The node still serves honest peers.
        let b = try Node(identity: Identity(), displayName: "beta", transports: [TCPTransport()])
        let info = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port)])
        let adv = Advertiser(node: a, service: try ServiceType("ok"), discovery: MemoryDiscovery())
        try await adv.start()
        let sa = Session(node: a)
        Task { for await i in adv.invitations { i.accept(into: sa) } }
        try await b.invite(info, to: Session(node: b), timeout: .seconds(5))
    }

    func testConnectionRefusedGivesAClearError() async throws {
        let b = try Node(identity: Identity(), displayName: "beta", transports: [TCPTransport()])
        let nobody = Identity().peerID
        // Port 1 on loopback: nothing listens there.
        let info = PeerInfo(peerID: nobody, displayName: "x", info: [:], endpoints: [TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: 1)])
        do {
            try await b.invite(info, to: Session(node: b), timeout: .seconds(2))
            XCTFail("must fail")
        } catch {
            XCTAssertTrue("\(error)".contains("Connection refused"), "\(error)")
        }
    }

    func testSixtyFourPeersInOneSession() async throws {
        let hub = try Node(identity: Identity(), displayName: "hub", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let hubSession = Session(node: hub)
        let adv = Advertiser(node: hub, service: try ServiceType("hub"), discovery: MemoryDiscovery())
        try await adv.start()
        Task { for await i in adv.invitations { i.accept(into: hubSession) } }
        let hubPorts = try await hub.start()
        let port = try XCTUnwrap(hubPorts[.tcp])
        let info = PeerInfo(peerID: hub.peerID, displayName: "hub", info: [:], endpoints: [TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port)])
        var spokes: [(Node, Session)] = []
        for i in 0..<64 {
            let n = try Node(identity: Identity(), displayName: "spoke-\(i)", transports: [TCPTransport()])
            let s = Session(node: n)
            try await n.invite(info, to: s, timeout: .seconds(10))
            spokes.append((n, s))
        }
        var connected = 0
        for _ in 0..<100 {
            connected = await hubSession.connectedPeers().count
            if connected == 64 { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        XCTAssertEqual(connected, 64)
        async let counter = collect(64, "messages from the spokes", from: hubSession, within: 60) { e -> PeerID? in
            if case let .message(p, _, _) = e { return p }; return nil
        }
        let all = spokes
        try await within(30, "each spoke sending one message") { for (n, s) in all { try await s.send(Array(n.displayName.utf8), to: [hub.peerID]) } }
        let from = Set(try await counter)
        XCTAssertEqual(from.count, 64, "one message from each spoke")
        let everyone = await hubSession.connectedPeers()
        try await hubSession.send(Array("to all".utf8), to: everyone)
        let last = spokes[63].1
        let text = try await waitFor(last, "the hub's message to all") { e -> String? in if case let .message(_, b, _) = e { return String(decoding: b, as: UTF8.self) }; return nil }
        XCTAssertEqual(text, "to all")
    }
}

/// Discovery for loopback tests: publishes the real TCP port on 127.0.0.1.
final class LoopbackDiscovery: Discovery, @unchecked Sendable {
    let inner = MemoryDiscovery()
    func publish(_ ad: Advertisement, service: ServiceType, ports: [Medium: UInt16], notices: @escaping @Sendable (String) -> Void) throws -> DiscoveryHandle {
        try inner.publish(ad, service: service, ports: ports, notices: notices)
    }
    func browse(_ service: ServiceType, handler: @escaping @Sendable (DiscoveryEvent) -> Void) throws -> DiscoveryHandle {
        try inner.browse(service) { e in
            switch e {
            case var .found(p):
                p.endpoints = p.endpoints.map { TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: $0.port) }
                handler(.found(p))
            default: handler(e)
            }
        }
    }
}
