import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkDBus
@testable import PeerLinkBluetooth

/// `peerlink doctor`'s Bluetooth discovery check without bluetoothd (the lab checks the
/// positive case: BluetoothDiscoveryLabTests).
final class DoctorBluetoothTests: XCTestCase {
    func testNoBluetoothdFailsWithAFix() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let check = DoctorBluetooth.blueZDiscoveryCheck(busAddress: bus.address)
        XCTAssertFalse(check.ok)
        XCTAssertTrue(check.detail.contains("bluetoothd is not running"), check.detail)
        XCTAssertTrue(check.fix?.contains("--media ip") ?? false, "\(String(describing: check.fix))")
    }

    func testNoBusFailsWithAFix() {
        let check = DoctorBluetooth.blueZDiscoveryCheck(busAddress: "unix:path=/nonexistent/peerlink-doctor.sock")
        XCTAssertFalse(check.ok)
        XCTAssertTrue(check.detail.contains("D-Bus"), check.detail)
    }
}

/// `peerlink doctor`'s pairing check: bonds with PeerLink peers and stale pairings, read from
/// bluetoothd's objects (`GetManagedObjects`).
final class DoctorPairingTests: XCTestCase {
    typealias Objects = [String: [String: [String: DBusValue]]]

    /// A PeerLink advert (PROTOCOL §14.2) as bluetoothd shows it in Device1.ServiceData.
    static let peerLinkData: DBusValue = .array([.dictEntry(.string("a1b4f7bc-7779-929a-af84-712768e27160"),
                                                            .variant(.array([1, 0xee, 0xdd, 0x88, 0x3d, 0xa0, 0xa9, 3, 1, 0x10].map { .byte($0) })))])

    func device(_ adapter: String, _ address: String, paired: Bool, bonded: Bool, connected: Bool = false,
                serviceData: DBusValue? = nil, name: String? = nil) -> (String, [String: [String: DBusValue]]) {
        var p: [String: DBusValue] = ["Address": .string(address), "Adapter": .objectPath("/org/bluez/\(adapter)"),
                                      "Paired": .bool(paired), "Bonded": .bool(bonded), "Connected": .bool(connected)]
        if let serviceData { p["ServiceData"] = serviceData }
        if let name { p["Name"] = .string(name) }
        return ("/org/bluez/\(adapter)/dev_" + address.replacingOccurrences(of: ":", with: "_"), ["org.bluez.Device1": p])
    }

    func objects(_ devices: [(String, [String: [String: DBusValue]])]) -> Objects {
        var o: Objects = ["/org/bluez/hci0": ["org.bluez.Adapter1": ["Address": .string("00:AA:01:00:00:00")]]]
        for (path, ifaces) in devices { o[path] = ifaces }
        return o
    }

    func testBondWithAPeerLinkPeerFailsWithTheRemoval() {
        let o = objects([device("hci1", "00:AA:01:00:00:00", paired: true, bonded: true, serviceData: Self.peerLinkData, name: "alpha")])
        let checks = DoctorBluetooth.pairingChecks(o)
        XCTAssertEqual(checks.count, 1)
        let c = checks[0]
        XCTAssertFalse(c.ok)
        XCTAssertEqual(c.name, "hci1 pairing with 00:AA:01:00:00:00")
        XCTAssertTrue(c.detail.contains("holds a bond") && c.detail.contains("(alpha)") && c.detail.contains("permission denied"), c.detail)
        XCTAssertTrue(c.fix?.hasPrefix("`bluetoothctl remove 00:AA:01:00:00:00` here") ?? false, "\(String(describing: c.fix))")
    }

    func testPairedWithoutBondWhileDisconnectedFails() {
        let o = objects([device("hci0", "00:AA:01:01:00:01", paired: true, bonded: false)])
        let checks = DoctorBluetooth.pairingChecks(o)
        XCTAssertEqual(checks.map(\.ok), [false])
        XCTAssertTrue(checks[0].detail.contains("paired without a stored key"), checks[0].detail)
        XCTAssertEqual(checks[0].fix, "`bluetoothctl remove 00:AA:01:01:00:01`")
    }

    /// What PeerLink's own links leave: an unbonded pairing while connected, nothing after;
    /// and bonds with other devices (a keyboard) are no concern of PeerLink's.
    func testOrdinaryStatesPass() {
        let headset: DBusValue = .array([.dictEntry(.string("0000fe2c-0000-1000-8000-00805f9b34fb"), .variant(.array([.byte(1), .byte(2)])))])
        let o = objects([
            device("hci0", "00:AA:01:01:00:01", paired: true, bonded: false, connected: true, serviceData: Self.peerLinkData),
            device("hci0", "00:AA:01:02:00:02", paired: false, bonded: false, serviceData: Self.peerLinkData),
            device("hci0", "00:AA:01:03:00:03", paired: true, bonded: true, serviceData: headset),
            device("hci0", "00:AA:01:04:00:04", paired: true, bonded: true),
        ])
        let checks = DoctorBluetooth.pairingChecks(o)
        XCTAssertEqual(checks.count, 1)
        XCTAssertTrue(checks[0].ok)
        XCTAssertTrue(checks[0].detail.hasPrefix("2 bonded devices, none advertising PeerLink"), checks[0].detail)
        XCTAssertTrue(DoctorBluetooth.pairingChecks(objects([]))[0].detail.hasPrefix("no bonds"))
    }

    /// Only the exact 10-byte advert counts as PeerLink's; malformed data does not.
    func testPeerLinkAdvertRecognition() {
        XCTAssertTrue(BluetoothPairingProblem.advertisesPeerLink(Self.peerLinkData))
        let short: DBusValue = .array([.dictEntry(.string("x"), .variant(.array([1, 2, 3].map { .byte($0) })))])
        XCTAssertFalse(BluetoothPairingProblem.advertisesPeerLink(short))
        let zeroVersion: DBusValue = .array([.dictEntry(.string("x"), .variant(.array([0, 0xee, 0xdd, 0x88, 0x3d, 0xa0, 0xa9, 3, 1, 0x10].map { .byte($0) })))])
        XCTAssertFalse(BluetoothPairingProblem.advertisesPeerLink(zeroVersion))
        XCTAssertFalse(BluetoothPairingProblem.advertisesPeerLink(nil))
    }
}
