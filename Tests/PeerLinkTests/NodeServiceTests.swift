import Foundation
import Synchronization
import XCTest
@testable import PeerLink
import PeerLinkCore

/// Node-level services: a protocol of PeerLink's own runs on a session's streams, registered
/// with the node, and never shows up in the application's events.
final class NodeServiceTests: XCTestCase {
    /// A toy service: whatever a peer writes on a `peerlink/echo/1` stream is recorded.
    final class EchoService: NodeService, @unchecked Sendable {
        let name = "echo"
        let streamPrefix: String? = "peerlink/echo/"
        let received = AsyncStream<String>.makeStream()
        func makeHandler(peer: PeerID, session: Session) -> any PeerProtocolHandler { Handler(service: self) }

        final class Handler: PeerProtocolHandler {
            let service: EchoService
            init(service: EchoService) { self.service = service }
            func handle(_ event: SessionEvent, in channel: isolated PeerChannel) -> Bool { false }
            func streamOpened(_ stream: IncomingStream, in channel: isolated PeerChannel) {
                let out = service.received.continuation
                Task {
                    var bytes: [UInt8] = []
                    while let chunk = try? await stream.read() { bytes += chunk }
                    out.yield("\(stream.name): \(String(decoding: bytes, as: UTF8.self))")
                }
            }
        }
    }

    func testAServiceGetsItsStreamsAndTheApplicationNeverSeesThem() async throws {
        let net = MemoryNetwork()
        let a = try Node(identity: Identity(), displayName: "a", transports: [MemoryTransport(network: net, address: "a")])
        let b = try Node(identity: Identity(), displayName: "b", transports: [MemoryTransport(network: net, address: "b")])
        let echo = EchoService()
        try b.register(echo)
        let sa = Session(node: a), sb = Session(node: b)
        let adv = Advertiser(node: b, service: try ServiceType("svc"), discovery: MemoryDiscovery())
        try await adv.start()
        let acceptor = Task { for await i in adv.invitations { i.accept(into: sb) } }
        defer { acceptor.cancel() }
        try await a.invite(PeerInfo(peerID: b.peerID, displayName: "b", info: [:],
                                    endpoints: [TransportEndpoint(medium: .memory, host: "b", port: 0)]), to: sa, timeout: .seconds(5))

        // The application's own streams still reach the application.
        let appStreams = Task { () -> [String] in
            var names: [String] = []
            for await e in sb.events { if case let .streamOpened(s) = e { names.append(s.name); if names.count == 1 { break } } }
            return names
        }
        let svc = try await sa.openServiceStream(name: "peerlink/echo/1", to: b.peerID)
        try await svc.write(Array("ping".utf8))
        await svc.close()
        let app = try await sa.openStream(name: "photos", to: b.peerID)
        await app.close()

        let got = try await first(echo.received.stream, within: 10)
        XCTAssertEqual(got, "peerlink/echo/1: ping", "the service did not get its stream's bytes")
        let names = try await valueWithin(10) { await appStreams.value }
        XCTAssertEqual(names, ["photos"], "the application saw a service's stream")

        // The application may not open a reserved name; a reserved stream no service answers is refused.
        do {
            _ = try await sa.openStream(name: "peerlink/anything", to: b.peerID)
            XCTFail("an application opened a reserved stream name")
        } catch let e as PeerLinkError {
            XCTAssertTrue("\(e)".contains("PeerLink's own"), "\(e)")
        }
        let orphan = try await sa.openServiceStream(name: "peerlink/nobody/1", to: b.peerID)
        var refused = false
        for _ in 0..<100 {
            do { try await orphan.write([UInt8](repeating: 1, count: 300_000)) } catch { refused = true; break }
        }
        XCTAssertTrue(refused, "a reserved stream nobody answers was not refused")
        await sa.disconnect()
        await sb.disconnect()
    }

    func testRegistrationRefusesUnreservedAndOverlappingPrefixes() throws {
        struct S: NodeService {
            let name: String
            let streamPrefix: String?
            func makeHandler(peer: PeerID, session: Session) -> any PeerProtocolHandler { ResourceHandler() }
        }
        let node = try Node(identity: Identity(), displayName: "n", transports: [])
        XCTAssertThrowsError(try node.register(S(name: "x", streamPrefix: "photos/"))) { XCTAssertTrue("\($0)".contains("must start with 'peerlink/'")) }
        XCTAssertThrowsError(try node.register(S(name: "x", streamPrefix: "peerlink/"))) { XCTAssertTrue("\($0)".contains("name the service")) }
        try node.register(S(name: "sf", streamPrefix: "peerlink/sf/"))
        XCTAssertThrowsError(try node.register(S(name: "sf2", streamPrefix: "peerlink/sf/2"))) { XCTAssertTrue("\($0)".contains("overlaps service sf")) }
        try node.register(S(name: "none", streamPrefix: nil))
        XCTAssertEqual(node.services.map(\.name), ["sf", "none"])
    }
}

/// A helper below found no value.
private struct NoValue: Error, CustomStringConvertible { let description: String }

/// The first element of `stream` within `seconds`.
func first<T: Sendable>(_ stream: AsyncStream<T>, within seconds: Double) async throws -> T {
    try await valueWithin(seconds) {
        for await v in stream { return v }
        throw NoValue(description: "the stream ended without a value")
    }
}

/// `body`'s value, or a thrown timeout after `seconds`.
func valueWithin<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { g in
        g.addTask { try await body() }
        g.addTask { try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9)); return nil }
        defer { g.cancelAll() }
        guard let v = try await g.next(), let value = v else { throw NoValue(description: "nothing within \(seconds) s") }
        return value
    }
}
