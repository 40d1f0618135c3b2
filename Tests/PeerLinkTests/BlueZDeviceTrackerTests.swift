import XCTest
import PeerLinkCore
import PeerLinkWire
@testable import PeerLink
@testable import PeerLinkDBus
@testable import PeerLinkBluetooth

/// Device1 property snapshots → found / updated / lost sightings, without Bluetooth.
final class BlueZDeviceTrackerTests: XCTestCase {
    let uuid = BluetoothServiceUUID.string(for: try! ServiceType("field-demo"))
    let peer = try! PeerID(bytes: (1...20).map { UInt8($0) })

    func props(_ data: [UInt8]?, uuid: String? = nil, rssi: Int16 = -40) -> [String: DBusValue] {
        var p: [String: DBusValue] = ["Address": .variant(.string("00:AA:01:01:00:01")), "RSSI": .variant(.int16(rssi))]
        if let data {
            p["ServiceData"] = .variant(.array([.dictEntry(.string((uuid ?? self.uuid).uppercased()), .variant(.array(data.map { .byte($0) })))]))
        }
        return p
    }

    func testFoundUpdatedLost() throws {
        var t = BlueZDeviceTracker(serviceUUID: uuid)
        let advert = try BluetoothAdvert(peerID: peer, rfcommChannel: 3, l2capPSM: 0x1001)
        let path = "/org/bluez/hci0/dev_00_AA_01_01_00_01"
        let ev = t.device(at: path, properties: props(advert.encode()))
        guard case let .found(s)? = ev.first, ev.count == 1 else { return XCTFail("\(ev)") }
        XCTAssertEqual(s.endpoints, [TransportEndpoint(medium: .rfcomm, host: "00:AA:01:01:00:01", port: 3),
                                     TransportEndpoint(medium: .l2cap, host: "00:AA:01:01:00:01", port: 0x1001)])
        XCTAssertTrue(s.advert.matches(peer))
        XCTAssertEqual(t.device(at: path, properties: props(advert.encode())), [])
        guard case .updated? = t.device(at: path, properties: props(advert.encode(), rssi: -70)).first else { return XCTFail() }
        XCTAssertEqual(t.removed(path), [.lost(address: "00:AA:01:01:00:01")])
        XCTAssertEqual(t.removed(path), [])
        // A device of another service, or without service data, is not reported.
        XCTAssertEqual(t.device(at: path, properties: props(advert.encode(), uuid: "0000110a-0000-1000-8000-00805f9b34fb")), [])
        XCTAssertEqual(t.device(at: path, properties: props(nil)), [])
        _ = t.device(at: path, properties: props(advert.encode()))
        XCTAssertEqual(t.removeAll(), [.lost(address: "00:AA:01:01:00:01")])
    }

    func testMalformedOrForeignVersionIsNoticedOnceAndIgnored() throws {
        var t = BlueZDeviceTracker(serviceUUID: uuid)
        let path = "/org/bluez/hci0/dev_X"
        let bad: [UInt8] = [1, 2, 3]
        let ev = t.device(at: path, properties: props(bad))
        XCTAssertEqual(ev, [.notice("ignored Bluetooth device 00:AA:01:01:00:01: truncated input: Bluetooth advert needs 10 byte(s), 3 left")])
        XCTAssertEqual(t.device(at: path, properties: props(bad)), [])
        let v2 = try BluetoothAdvert(version: 2, peerIDPrefix: [1, 2, 3, 4, 5, 6], rfcommChannel: 1, l2capPSM: nil)
        XCTAssertEqual(t.device(at: path, properties: props(v2.encode())),
                       [.notice("ignored Bluetooth device 00:AA:01:01:00:01: protocol version 2, this node speaks 1")])
        XCTAssertTrue(t.known.isEmpty)
    }
}
