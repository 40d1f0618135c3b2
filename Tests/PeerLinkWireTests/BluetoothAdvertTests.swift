import XCTest
import PeerLinkWire

/// The LE advertisement service data of docs/PROTOCOL.md §14.2 (the documented vector is
/// checked in PeerLinkCoreTests with the UUID derivation).
final class BluetoothAdvertTests: XCTestCase {
    let peer = try! PeerID(bytes: (1...20).map { UInt8($0) })

    func testRoundTripWithEitherOrBothEndpoints() throws {
        for (ch, psm) in [(UInt8?(5), UInt16?(0x1001)), (30, nil), (nil, 0x0081), (1, 0xfeff)] {
            let a = try BluetoothAdvert(peerID: peer, rfcommChannel: ch, l2capPSM: psm)
            let bytes = a.encode()
            XCTAssertEqual(bytes.count, BluetoothAdvert.byteCount)
            XCTAssertEqual(try BluetoothAdvert.decode(bytes), a)
            XCTAssertEqual(Array(bytes[1...6]), [1, 2, 3, 4, 5, 6])
            XCTAssertTrue(a.matches(peer))
        }
        XCTAssertFalse(try BluetoothAdvert(peerID: peer, rfcommChannel: 1, l2capPSM: nil).matches(try PeerID(bytes: [UInt8](repeating: 9, count: 20))))
    }

    func testMalformedServiceDataIsRejectedWithClearErrors() {
        func reason(_ bytes: [UInt8]) -> String {
            do { _ = try BluetoothAdvert.decode(bytes); return "accepted" } catch { return "\(error)" }
        }
        let good: [UInt8] = [1, 1, 2, 3, 4, 5, 6, 3, 0x01, 0x10]
        XCTAssertEqual(reason(Array(good.prefix(9))), "truncated input: Bluetooth advert needs 10 byte(s), 9 left")
        XCTAssertEqual(reason([]), "truncated input: Bluetooth advert needs 10 byte(s), 0 left")
        XCTAssertEqual(reason(good + [0]), "malformed input: 1 unexpected byte(s) after the end of the structure")
        var v = good; v[0] = 0
        XCTAssertEqual(reason(v), "invalid Bluetooth advert version: 0 is not a protocol version")
        v = good; v[7] = 31
        XCTAssertEqual(reason(v), "invalid Bluetooth advert RFCOMM channel: 31 is outside 1-30")
        v = good; v[8] = 0x02
        XCTAssertEqual(reason(v), "invalid Bluetooth advert L2CAP PSM: 0x1002 is not a valid PSM (odd, lowest bit of the upper byte clear)")
        v = good; v[8] = 0x01; v[9] = 0x11
        XCTAssertTrue(reason(v).contains("0x1101 is not a valid PSM"))
        v = good; v[7] = 0; v[8] = 0; v[9] = 0
        XCTAssertEqual(reason(v), "invalid Bluetooth advert: neither an RFCOMM channel nor an L2CAP PSM")
        XCTAssertThrowsError(try BluetoothAdvert(version: 1, peerIDPrefix: [1, 2], rfcommChannel: 1, l2capPSM: nil))
    }
}
