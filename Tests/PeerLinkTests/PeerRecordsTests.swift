import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth

/// Discovery records from several backends merge into one peer per peer ID.
final class PeerRecordsTests: XCTestCase {
    let id = Identity().peerID
    let ip = TransportEndpoint(medium: .tcp, host: "10.0.0.2", port: 7000)
    let bt = TransportEndpoint(medium: .rfcomm, host: "00:AA:01:01:00:01", port: 3)

    func info(_ e: [TransportEndpoint], name: String = "alpha", kv: [String: String] = [:]) -> PeerInfo {
        PeerInfo(peerID: id, displayName: name, info: kv, endpoints: e)
    }

    func testMergeAndLoseBySource() {
        var r = PeerRecords()
        XCTAssertEqual(r.apply(.found(info([ip], kv: ["role": "sensor"])), from: 0), .found(info([ip], kv: ["role": "sensor"])))
        XCTAssertEqual(r.apply(.found(info([bt], kv: ["role": "other", "x": "1"])), from: 1),
                       .updated(info([ip, bt], kv: ["role": "sensor", "x": "1"])), "endpoints of both media; first backend wins per key")
        XCTAssertNil(r.apply(.updated(info([bt], kv: ["role": "other", "x": "1"])), from: 1), "no change, no event")
        XCTAssertEqual(r.apply(.lost(id), from: 0), .updated(info([bt], kv: ["role": "other", "x": "1"])),
                       "still reachable over Bluetooth")
        XCTAssertNil(r.apply(.lost(id), from: 0), "already lost there")
        XCTAssertEqual(r.apply(.lost(id), from: 1), .lost(id), "lost everywhere")
        XCTAssertTrue(r.all.isEmpty)
        XCTAssertEqual(r.apply(.notice("daemon back"), from: 1), .notice("daemon back"))
    }

    func testBrowserOverTwoBackendsReportsOnePeer() async throws {
        let wifi = MemoryDiscovery(addressOf: { _ in "a-ip" }), radio = MemoryDiscovery(addressOf: { _ in "a-bt" })
        let me = try Node(identity: Identity(), displayName: "me", transports: [])
        let other = Identity()
        let service = try ServiceType("merge")
        let browser = Browser(node: me, service: service, discoveries: [wifi, radio])
        try await browser.start()
        let ad = try Advertisement(peerID: other.peerID, displayName: "alpha", info: DiscoveryInfo())
        var it = browser.events.makeAsyncIterator()
        let h1 = try wifi.publish(ad, service: service, ports: [.memory: 1]) { _ in }
        let h2 = try radio.publish(ad, service: service, ports: [.memory: 2]) { _ in }
        guard case let .found(first)? = await it.next() else { return XCTFail("expected found") }
        XCTAssertEqual(first.endpoints.map(\.host), ["a-ip"])
        guard case let .updated(both)? = await it.next() else { return XCTFail("expected updated") }
        XCTAssertEqual(both.peerID, other.peerID)
        XCTAssertEqual(both.endpoints.map(\.host), ["a-ip", "a-bt"])
        // A loop that starts now is told of the merged peer as found.
        var late = browser.events.makeAsyncIterator()
        guard case let .found(merged)? = await late.next() else { return XCTFail("expected found") }
        XCTAssertEqual(merged.endpoints.map(\.host), ["a-ip", "a-bt"])
        h1.stop()
        guard case let .updated(left)? = await it.next() else { return XCTFail("expected updated") }
        XCTAssertEqual(left.endpoints.map(\.host), ["a-bt"])
        h2.stop()
        let last = await it.next()
        XCTAssertEqual(last, .lost(other.peerID))
        browser.stop()
    }
}
