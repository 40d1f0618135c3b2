import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth

/// BlueZDiscovery on a host without bluetoothd: clear errors, nothing started.
final class BlueZDiscoveryHostTests: XCTestCase {
    func testBrowseWithoutBluetoothdThrowsClearly() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let node = try Node(identity: Identity(), displayName: "n", transports: [RFCOMMTransport()])
        let d = BlueZDiscovery(node: node, busAddress: bus.address)
        XCTAssertThrowsError(try d.browse(try ServiceType("demo")) { _ in }) { e in
            XCTAssertEqual(e as? BlueZError, .daemonNotRunning)
        }
    }

    func testPublishNeedsABluetoothPort() throws {
        let node = try Node(identity: Identity(), displayName: "n", transports: [TCPTransport()])
        let d = BlueZDiscovery(node: node, busAddress: "unix:path=/nonexistent/peerlink.sock")
        let ad = try Advertisement(peerID: node.peerID, displayName: "n", info: DiscoveryInfo())
        XCTAssertThrowsError(try d.publish(ad, service: try ServiceType("demo"), ports: [.tcp: 4000]) { _ in }) { e in
            XCTAssertTrue("\(e)".contains("no Bluetooth transport"), "\(e)")
        }
    }

    func testAdvertiserKeepsIPWhenBluetoothCannotPublish() async throws {
        // Two backends, one of which cannot publish: the advertiser still starts, and says why.
        let node = try Node(identity: Identity(), displayName: "n", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let adv = Advertiser(node: node, service: try ServiceType("demo"),
                             discoveries: [MemoryDiscovery(), BlueZDiscovery(node: node, busAddress: "unix:path=/nonexistent/peerlink.sock")])
        try await adv.start()
        var it = adv.notices.makeAsyncIterator()
        let note = await it.next()
        XCTAssertTrue(note?.contains("not advertised on one medium") ?? false, "\(String(describing: note))")
        await adv.stop()
        // Only backends that all fail make start() throw.
        let lone = Advertiser(node: node, service: try ServiceType("demo"),
                              discoveries: [BlueZDiscovery(node: node, busAddress: "unix:path=/nonexistent/peerlink.sock")])
        do {
            try await lone.start()
            XCTFail("no backend could publish")
        } catch {
            XCTAssertTrue("\(error)".contains("no Bluetooth transport"), "\(error)")
        }
    }
}
