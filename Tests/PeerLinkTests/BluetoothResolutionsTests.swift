import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth
import PeerLinkCore
import PeerLinkWire

/// The sans-I/O table behind BlueZDiscovery: sightings + resolution outcomes → peer events.
final class BluetoothResolutionsTests: XCTestCase {
    let peerA = try! PeerID(bytes: Array(repeating: 0xaa, count: 20))
    let peerB = try! PeerID(bytes: Array(repeating: 0xbb, count: 20))

    func sighting(_ address: String, _ peer: PeerID, channel: UInt8 = 3, rssi: Int16? = -40) -> BluetoothSighting {
        BluetoothSighting(address: address, advert: try! BluetoothAdvert(peerID: peer, rfcommChannel: channel, l2capPSM: 0x1001), rssi: rssi)
    }

    func info(_ peer: PeerID, _ s: BluetoothSighting) -> PeerInfo {
        PeerInfo(peerID: peer, displayName: "pi", info: ["room": "lab"], endpoints: s.endpoints)
    }

    /// The generation of the single resolve action in `actions`.
    func generation(_ actions: [BluetoothResolutions.Action], file: StaticString = #filePath, line: UInt = #line) -> Int? {
        let gens = actions.compactMap { if case let .resolve(_, g, _) = $0 { g } else { nil } }
        XCTAssertEqual(gens.count, 1, "one resolve action expected in \(actions)", file: file, line: line)
        return gens.first
    }

    func testFoundOnlyAfterResolutionAndOnlyOnce() throws {
        var t = BluetoothResolutions()
        let s = sighting("00:AA:01:00:00:01", peerA)
        let first = t.sighted(s)
        XCTAssertEqual(first, [.resolve(s, generation: 1, after: 0)], "a new device is asked at once, not yet reported")
        // The RSSI changes while resolving: nothing new to do.
        XCTAssertEqual(t.sighted(sighting("00:AA:01:00:00:01", peerA, rssi: -70)), [])
        XCTAssertEqual(t.resolved(address: s.address, generation: 1, as: info(peerA, s)), [.emit(.found(info(peerA, s)))])
        // Later RSSI changes and a repeated outcome do nothing.
        XCTAssertEqual(t.sighted(sighting("00:AA:01:00:00:01", peerA, rssi: -20)), [])
        XCTAssertEqual(t.resolved(address: s.address, generation: 1, as: info(peerA, s)), [])
        XCTAssertEqual(t.lost(address: s.address), [.emit(.lost(peerA))])
        XCTAssertEqual(t.lost(address: s.address), [], "lost once")
    }

    func testFailureIsReportedAndRetriedWithGrowingDelay() throws {
        var t = BluetoothResolutions()
        let s = sighting("00:AA:01:00:00:01", peerA)
        var g = try XCTUnwrap(generation(t.sighted(s)))
        var delays: [Double] = []
        for _ in 0..<6 {
            let out = t.failed(address: s.address, generation: g, reason: "connection refused")
            guard case let .emit(.notice(text))? = out.first else { return XCTFail("notice expected: \(out)") }
            XCTAssertTrue(text.contains("00:AA:01:00:00:01") && text.contains("connection refused") && text.contains("aaaaaaaaaaaa"), text)
            guard case let .resolve(_, next, after)? = out.last else { return XCTFail("retry expected: \(out)") }
            XCTAssertNotEqual(next, g)
            g = next
            delays.append(after)
        }
        XCTAssertEqual(delays, [2, 4, 8, 16, 30, 30])
        // An outcome of a superseded attempt is ignored; the current one counts.
        XCTAssertEqual(t.resolved(address: s.address, generation: g - 1, as: info(peerA, s)), [])
        XCTAssertEqual(t.resolved(address: s.address, generation: g, as: info(peerA, s)), [.emit(.found(info(peerA, s)))])
    }

    func testLostDeviceCancelsItsResolution() {
        var t = BluetoothResolutions()
        let s = sighting("00:AA:01:00:00:01", peerA)
        _ = t.sighted(s)
        XCTAssertEqual(t.lost(address: s.address), [], "never reported, so nothing to lose")
        XCTAssertEqual(t.resolved(address: s.address, generation: 1, as: info(peerA, s)), [], "late outcome after lost")
        XCTAssertEqual(t.failed(address: s.address, generation: 1, reason: "x"), [], "no retry for a gone device")
    }

    func testChangedAdvertIsResolvedAgain() throws {
        var t = BluetoothResolutions()
        let s1 = sighting("00:AA:01:00:00:01", peerA, channel: 3)
        _ = t.sighted(s1)
        _ = t.resolved(address: s1.address, generation: 1, as: info(peerA, s1))
        // The node restarted on another channel: the old peer is lost, the device asked again.
        let s2 = sighting("00:AA:01:00:00:01", peerA, channel: 5)
        let out = t.sighted(s2)
        XCTAssertEqual(out.first, .emit(.lost(peerA)))
        let g = try XCTUnwrap(generation(out))
        XCTAssertEqual(t.resolved(address: s2.address, generation: g, as: info(peerA, s2)), [.emit(.found(info(peerA, s2)))])
        // Another node took over the address (prefix changed).
        let s3 = sighting("00:AA:01:00:00:01", peerB)
        let out3 = t.sighted(s3)
        XCTAssertEqual(out3.first, .emit(.lost(peerA)))
        XCTAssertNotNil(generation(out3))
    }

    func testOnePeerSeenAtTwoAddressesIsOnePeer() throws {
        var t = BluetoothResolutions()
        let s1 = sighting("00:AA:01:00:00:01", peerA), s2 = sighting("00:AA:01:00:00:02", peerA, channel: 4)
        let g1 = try XCTUnwrap(generation(t.sighted(s1))), g2 = try XCTUnwrap(generation(t.sighted(s2)))
        XCTAssertEqual(t.resolved(address: s1.address, generation: g1, as: info(peerA, s1)), [.emit(.found(info(peerA, s1)))])
        var both = info(peerA, s1)
        both.endpoints = s1.endpoints + s2.endpoints
        XCTAssertEqual(t.resolved(address: s2.address, generation: g2, as: info(peerA, s2)), [.emit(.updated(both))])
        XCTAssertEqual(t.lost(address: s1.address), [.emit(.updated(info(peerA, s2)))])
        XCTAssertEqual(t.lost(address: s2.address), [.emit(.lost(peerA))])
    }
}
