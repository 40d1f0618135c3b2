import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkDBus
@testable import PeerLinkBluetooth

/// A BR/EDR dial that timed out asks bluetoothd to drop the link it went over, and only that
/// one: checked against a stand-in bluetoothd (org.bluez on a private bus: the ObjectManager's
/// adapters and devices, `Device1.Disconnect` recorded). The lab covers the real daemon
/// (BluetoothLabTests.test5: a re-invite after the remote's adapter was power-cycled).
final class StaleACLTests: XCTestCase {
    private let remote = "00:AA:01:03:00:03"
    private let other = "00:AA:01:05:00:05"
    private let hci0 = "00:AA:01:00:00:00", hci1 = "00:AA:01:01:00:01"

    /// Recorded `Disconnect` calls, by object path.
    final class Calls: @unchecked Sendable {
        private let lock = NSLock()
        private var paths: [String] = []
        func add(_ p: String) { lock.withLock { paths.append(p) } }
        func take() -> [String] { lock.withLock { defer { paths = [] }; return paths.sorted() } }
    }

    /// A stand-in bluetoothd: two adapters, `remote` connected through both, `other` known but
    /// not connected.
    private func fakeBluetoothd(on bus: PrivateBus, calls: Calls) throws -> DBusObjectServer {
        let server = try DBusObjectServer(address: bus.address)
        _ = try server.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                            [.string("org.bluez"), .uint32(4)])
        var objects: [String: [String: [String: DBusValue]]] = [
            "/org/bluez/hci0": ["org.bluez.Adapter1": ["Address": .string(hci0), "Powered": .bool(true)]],
            "/org/bluez/hci1": ["org.bluez.Adapter1": ["Address": .string(hci1), "Powered": .bool(true)]],
        ]
        func device(_ adapter: String, _ address: String, connected: Bool) {
            let path = "/org/bluez/\(adapter)/dev_" + address.replacingOccurrences(of: ":", with: "_")
            objects[path] = ["org.bluez.Device1": ["Address": .string(address), "Connected": .bool(connected),
                                                   "Adapter": .objectPath("/org/bluez/\(adapter)")]]
            server.export(path, DBusExportedObject(properties: [:], methods: [
                "org.bluez.Device1.Disconnect": { _ in calls.add(path); return .success([]) },
            ]))
        }
        device("hci0", remote, connected: true)
        device("hci1", remote, connected: true)
        device("hci0", other, connected: false)
        let tree = objects
        server.export("/", DBusExportedObject(properties: [:], methods: [
            "org.freedesktop.DBus.ObjectManager.GetManagedObjects": { _ in
                .success([.array(tree.sorted { $0.key < $1.key }.map { path, ifaces in
                    .dictEntry(.objectPath(path), .array(ifaces.map { .dictEntry(.string($0.key), .propertyDictionary($0.value)) }))
                })])
            },
        ]))
        return server
    }

    /// Runs `body` with the stand-in bluetoothd up on a private bus (its address, its calls).
    private func withFakeBluetoothd(_ body: (_ bus: String, _ calls: Calls) throws -> Void) throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let calls = Calls()
        let server = try fakeBluetoothd(on: bus, calls: calls)
        defer { server.stop() }
        try body(bus.address, calls)
    }

    func testDropsOnlyTheConnectedDeviceOnTheDialingAdapter() throws {
        try withFakeBluetoothd { bus, calls in
            XCTAssertEqual(StaleACL.drop(remote: remote, localAdapter: hci0, busAddress: bus), ["/org/bluez/hci0/dev_00_AA_01_03_00_03"])
            XCTAssertEqual(calls.take(), ["/org/bluez/hci0/dev_00_AA_01_03_00_03"])
            // Addresses match whatever their case.
            XCTAssertEqual(StaleACL.drop(remote: remote.lowercased(), localAdapter: hci1.lowercased(), busAddress: bus).count, 1)
            XCTAssertEqual(calls.take(), ["/org/bluez/hci1/dev_00_AA_01_03_00_03"])
            // No adapter chosen: wherever it is connected.
            XCTAssertEqual(StaleACL.drop(remote: remote, localAdapter: nil, busAddress: bus).count, 2)
            XCTAssertEqual(calls.take().count, 2)
            // Known but not connected, or unknown: nothing to drop.
            XCTAssertEqual(StaleACL.drop(remote: other, localAdapter: nil, busAddress: bus), [])
            XCTAssertEqual(StaleACL.drop(remote: "00:AA:01:09:00:09", localAdapter: nil, busAddress: bus), [])
            XCTAssertEqual(calls.take(), [])
        }
    }

    func testOnlyATimeoutDropsAndTheErrorSaysSo() throws {
        try withFakeBluetoothd { bus, calls in
            let refused = TransportError.system(operation: "RFCOMM connect to \(remote) channel 1", errno: ECONNREFUSED)
            let same = StaleACL.afterTimeout(refused, remote: remote, localAdapter: hci0, busAddress: bus)
            XCTAssertEqual("\(same)", "\(refused)")
            XCTAssertEqual(calls.take(), [], "a refusal means the remote answered: its link is not stale")

            let timeout = TransportError.timedOut(operation: "RFCOMM connect to \(remote) channel 1 from \(hci0)", after: .seconds(10))
            let explained = StaleACL.afterTimeout(timeout, remote: remote, localAdapter: hci0, busAddress: bus)
            guard case let TransportError.timedOut(operation, limit) = explained else { return XCTFail("\(explained)") }
            XCTAssertEqual(limit, .seconds(10))
            XCTAssertTrue(operation.contains("asked it to drop that link"), operation)
            XCTAssertEqual(calls.take(), ["/org/bluez/hci0/dev_00_AA_01_03_00_03"])

            let unknown = TransportError.timedOut(operation: "RFCOMM connect to 00:AA:01:09:00:09 channel 1", after: .seconds(10))
            XCTAssertEqual("\(StaleACL.afterTimeout(unknown, remote: "00:AA:01:09:00:09", localAdapter: nil, busAddress: bus))", "\(unknown)")
        }
    }

    /// While this process holds a connection to the remote (another channel over the same
    /// link), a timed-out dial leaves the link alone; once that connection is gone it drops it.
    func testALinkCarryingOneOfOurConnectionsIsKept() throws {
        try withFakeBluetoothd { bus, calls in
            var held: StaleACL.Registration? = StaleACL.register(remote: remote.lowercased())
            XCTAssertEqual(StaleACL.openConnections(to: remote), 1)
            XCTAssertEqual(StaleACL.drop(remote: remote, localAdapter: hci0, busAddress: bus), [])
            XCTAssertEqual(calls.take(), [])
            withExtendedLifetime(held) {}
            held = nil
            XCTAssertEqual(StaleACL.openConnections(to: remote), 0)
            XCTAssertEqual(StaleACL.drop(remote: remote, localAdapter: hci0, busAddress: bus).count, 1)
            XCTAssertEqual(calls.take(), ["/org/bluez/hci0/dev_00_AA_01_03_00_03"])
        }
    }

    func testNoBluetoothdDropsNothing() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        XCTAssertEqual(StaleACL.drop(remote: remote, localAdapter: nil, busAddress: bus.address), [])
        XCTAssertEqual(StaleACL.drop(remote: remote, localAdapter: nil, busAddress: "unix:path=/nonexistent/peerlink.sock"), [])
    }

    /// A device met a moment ago is "recently connected" (a quick redial may meet its old
    /// RFCOMM session still closing); one never met, or met long ago, is not.
    func testConnectedRecentlyFollowsOpenAndClosedConnections() {
        let address = "00:AA:01:0F:00:0F"
        XCTAssertFalse(StaleACL.connectedRecently(address, within: 3), "never met")
        var held: StaleACL.Registration? = StaleACL.register(remote: address.lowercased())
        XCTAssertNotNil(held)
        XCTAssertTrue(StaleACL.connectedRecently(address, within: 3), "a connection is open")
        held = nil
        XCTAssertTrue(StaleACL.connectedRecently(address, within: 3), "closed just now")
        XCTAssertFalse(StaleACL.connectedRecently(address, within: 0), "closed longer ago than the window")
        XCTAssertFalse(StaleACL.connectedRecently(other, within: 3), "another device")
    }
}
