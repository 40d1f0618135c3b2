import XCTest
import PeerLink

/// An advertiser with no discovery backend: the node publishes nothing, and a peer that was
/// given its address still reaches it and is invited.
final class AdvertiserWithoutDiscoveryTests: XCTestCase {
    func testAPeerGivenTheAddressIsInvitedAndExchangesMessages() async throws {
        let a = try Node(identity: Identity(), displayName: "listener", transports: [TCPTransport()])
        let b = try Node(identity: Identity(), displayName: "dialler", transports: [TCPTransport()])
        let sa = Session(node: a), sb = Session(node: b)
        let advertiser = Advertiser(node: a, service: try ServiceType("no-discovery"))
        XCTAssertTrue(advertiser.discoveries.isEmpty)
        try await advertiser.start()
        let ports = try await a.start()
        let port = try XCTUnwrap(ports[.tcp], "the node listens on TCP")
        let asked = Task { () -> [UInt8]? in
            for await invitation in advertiser.invitations {
                invitation.accept(into: sa)
                return invitation.context
            }
            return nil
        }
        let address = PeerInfo(peerID: a.peerID, displayName: "listener", info: [:],
                               endpoints: [TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port)])
        try await b.invite(address, to: sb, context: Array("hello".utf8), timeout: .seconds(10))
        let context = await asked.value
        XCTAssertEqual(context, Array("hello".utf8), "the advertiser handed the invitation to the application")

        try await sb.send(Array("ping".utf8), to: [a.peerID])
        let got = await firstMessage(sa, timeout: 10)
        XCTAssertEqual(got, Array("ping".utf8))
        await sb.disconnect()
        await sa.disconnect()
        await advertiser.stop()
    }

    private func firstMessage(_ session: Session, timeout: Double) async -> [UInt8]? {
        await withTaskGroup(of: [UInt8]?.self) { group in
            group.addTask {
                for await event in session.events { if case let .message(_, bytes, _) = event { return bytes } }
                return nil
            }
            group.addTask { try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9)); return nil }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
