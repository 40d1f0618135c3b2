import Foundation
import XCTest
@testable import PeerLink

/// `peerlink doctor`'s Bluetooth discovery check without bluetoothd (the lab checks the
/// positive case: BluetoothDiscoveryLabTests).
final class DoctorBluetoothTests: XCTestCase {
    func testNoBluetoothdFailsWithAFix() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let check = Doctor.blueZDiscoveryCheck(busAddress: bus.address)
        XCTAssertFalse(check.ok)
        XCTAssertTrue(check.detail.contains("bluetoothd is not running"), check.detail)
        XCTAssertTrue(check.fix?.contains("--media ip") ?? false, "\(String(describing: check.fix))")
    }

    func testNoBusFailsWithAFix() {
        let check = Doctor.blueZDiscoveryCheck(busAddress: "unix:path=/nonexistent/peerlink-doctor.sock")
        XCTAssertFalse(check.ok)
        XCTAssertTrue(check.detail.contains("D-Bus"), check.detail)
    }
}
