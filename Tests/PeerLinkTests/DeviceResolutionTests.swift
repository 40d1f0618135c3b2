import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth
import PeerLinkCore
import PeerLinkWire

/// `Node.resolve`: learning a device's full peer ID, name and discovery info from the
/// handshake when an advert carried only a prefix (PROTOCOL §14.3). Real TCP on loopback; the
/// Bluetooth variant runs in the lab (BluetoothLabTests).
final class DeviceResolutionTests: XCTestCase {
    func testResolveLearnsIdentityNameAndInfoWithoutBotheringTheApp() async throws {
        let b = try Node(identity: Identity(), displayName: "beta-pi", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let adv = Advertiser(node: b, service: try ServiceType("resolve"), info: try DiscoveryInfo(["room": "lab", "v": "2"]),
                             discovery: MemoryDiscovery())
        try await adv.start()
        let asked = Counter()
        let sb = Session(node: b)
        Task { for await i in adv.invitations { asked.increment(); i.accept(into: sb) } }
        let ports = try await b.start()
        let port = try XCTUnwrap(ports[.tcp])
        let endpoint = TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port)

        let a = try Node(identity: Identity(), displayName: "alpha", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let prefix = Array(b.peerID.bytes.prefix(BluetoothAdvert.peerIDPrefixCount))
        let found = try await a.resolve([endpoint], expectingPrefix: prefix, timeout: .seconds(5))
        XCTAssertEqual(found.peerID, b.peerID)
        XCTAssertEqual(found.displayName, "beta-pi")
        XCTAssertEqual(found.info, ["room": "lab", "v": "2"])
        XCTAssertEqual(found.endpoints, [endpoint])

        // A wrong prefix (another node behind the advert) fails the handshake, with its reason.
        var wrong = prefix
        wrong[0] ^= 0xff
        do {
            _ = try await a.resolve([endpoint], expectingPrefix: wrong, timeout: .seconds(5))
            XCTFail("a device whose ID does not match the advert must not resolve")
        } catch let PeerLinkError.unresolved(hex, failures) {
            XCTAssertEqual(hex.count, 12)
            XCTAssertEqual(failures.map(\.reason), [.wrongPrefix(b.peerID)], "\(failures)")
            XCTAssertTrue(failures.description.contains("does not start with the advertised bytes"), "\(failures)")
        }

        // Nothing reached beta's application: beta has decided about both connections (one
        // identified itself and left, one failed the handshake) and asked nobody. Each decision
        // is recorded after the point where beta would have asked its application.
        let decided = await waitUntil(timeout: 10) {
            let o = b.incomingOutcomes.all
            return o.contains(.identified(a.peerID)) && o.contains { if case .handshakeFailed = $0 { return true }; return false }
        }
        XCTAssertTrue(decided, "beta ended both resolving connections: \(b.incomingOutcomes.all)")
        XCTAssertEqual(b.incomingOutcomes.all.filter { $0 == .asked(a.peerID) }, [], "\(b.incomingOutcomes.all)")
        XCTAssertEqual(asked.value, 0)
        // Beta still takes a real invitation, and that one asks its application.
        try await a.invite(found, to: Session(node: a), timeout: .seconds(5))
        XCTAssertEqual(asked.value, 1)
        XCTAssertEqual(b.incomingOutcomes.all.last, .asked(a.peerID))
        await adv.stop()
    }

    func testNodeThatDoesNotAdvertiseSendsNoInfo() async throws {
        let b = try Node(identity: Identity(), displayName: "quiet", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let ports = try await b.start()
        let port = try XCTUnwrap(ports[.tcp])
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let found = try await a.resolve([TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port)],
                                        expectingPrefix: Array(b.peerID.bytes.prefix(6)), timeout: .seconds(5))
        XCTAssertEqual(found.peerID, b.peerID)
        XCTAssertEqual(found.info, [:])
    }

    func testUnreachableEndpointsAreAllReported() async throws {
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [TCPTransport(bindHost: "127.0.0.1")])
        // A port nobody listens on, and a medium the node has no transport for.
        let closed = try TCPTransport(bindHost: "127.0.0.1").listen(port: 0) { $0.close() }
        let port = closed.port
        closed.close()
        do {
            _ = try await a.resolve([TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port),
                                     TransportEndpoint(medium: .rfcomm, host: "00:11:22:33:44:55", port: 3)],
                                    expectingPrefix: [1, 2, 3, 4, 5, 6], timeout: .seconds(2))
            XCTFail("nothing to resolve")
        } catch let PeerLinkError.unresolved(hex, failures) {
            XCTAssertEqual(hex, "010203040506")
            XCTAssertEqual(failures.map(\.reason), [.refused, .noTransport(.rfcomm)], "\(failures)")
            XCTAssertTrue(failures[1].description.contains("no rfcomm transport"), "\(failures)")
        }
    }
}
