import Foundation
import XCTest
import PeerLinkCore
import PeerLinkWire
@testable import PeerLink
@testable import PeerLinkDBus
@testable import PeerLinkBluetooth

/// The D-Bus export layer through a private dbus-daemon: a second connection calls an
/// exported object (Properties.GetAll/Get, its own method, unknown method/object/property)
/// and gets the values or D-Bus errors; a call whose callee calls back into an exported
/// object completes; BlueZAdvertiser without bluetoothd fails with a clear error.
final class DBusExportTests: XCTestCase {
    func exported(_ released: @escaping @Sendable () -> Void) -> DBusExportedObject {
        DBusExportedObject(
            properties: [
                "org.bluez.LEAdvertisement1": [
                    "Type": .string("peripheral"),
                    "ServiceData": .propertyDictionary(["350ce5fe-7e7e-8c20-a17e-e61700ffc449": .bytes([1, 2, 3])]),
                    "Includes": .emptyArray(elementSignature: "s"),
                    "Discoverable": .bool(true),
                ],
                "org.example.Empty": [:],
            ],
            methods: ["org.bluez.LEAdvertisement1.Release": { args in
                released()
                return args.isEmpty ? .success([]) : .failure(.call(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "Release takes no arguments"))
            }])
    }

    func testClientReadsPropertiesAndGetsErrorsFromAnExportedObject() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let server = try DBusObjectServer(address: bus.address)
        defer { server.stop() }
        let releases = LockedCounter()
        server.export("/org/peerlink/test", exported { releases.increment() })
        XCTAssertTrue(server.uniqueName.hasPrefix(":"), server.uniqueName)
        let client = try DBusConnection(address: bus.address)
        let dest = server.uniqueName

        let all = try client.call(dest, "/org/peerlink/test", "org.freedesktop.DBus.Properties", "GetAll", [.string("org.bluez.LEAdvertisement1")])
        XCTAssertEqual(all.count, 1)
        let props = try XCTUnwrap(all.first).dictionary
        XCTAssertEqual(Set(props.keys), ["Type", "ServiceData", "Includes", "Discoverable"])
        XCTAssertEqual(props["Type"]?.string, "peripheral")
        XCTAssertEqual(props["Discoverable"]?.bool, true)
        XCTAssertEqual(props["Includes"]?.unwrapped, .array([]))
        let sd = try XCTUnwrap(props["ServiceData"]).dictionary
        XCTAssertEqual(sd["350ce5fe-7e7e-8c20-a17e-e61700ffc449"]?.bytes, [1, 2, 3])
        // The same bytes as BlueZBrowser's tracker reads them from Device1.ServiceData.
        XCTAssertEqual(BlueZDeviceTracker.serviceData(props["ServiceData"], uuid: "350ce5fe-7e7e-8c20-a17e-e61700ffc449"), [1, 2, 3])

        // An interface with no properties answers an empty, correctly typed a{sv}.
        XCTAssertEqual(try client.call(dest, "/org/peerlink/test", "org.freedesktop.DBus.Properties", "GetAll", [.string("org.example.Empty")]), [.array([])])

        let type = try client.call(dest, "/org/peerlink/test", "org.freedesktop.DBus.Properties", "Get", [.string("org.bluez.LEAdvertisement1"), .string("Type")])
        XCTAssertEqual(type, [.variant(.string("peripheral"))])

        func expectError(_ name: String, at path: String = "/org/peerlink/test", _ iface: String, _ method: String, _ args: [DBusValue] = [],
                         line: UInt = #line) {
            XCTAssertThrowsError(try client.call(dest, path, iface, method, args), line: line) { e in
                guard case let .call(n, m)? = e as? DBusFailure else { return XCTFail("unexpected \(e)", line: line) }
                XCTAssertEqual(n, name, m, line: line)
                XCTAssertFalse(m.isEmpty, line: line)
            }
        }
        expectError("org.freedesktop.DBus.Error.UnknownMethod", "org.bluez.LEAdvertisement1", "Frobnicate")
        expectError("org.freedesktop.DBus.Error.UnknownProperty", "org.freedesktop.DBus.Properties", "Get", [.string("org.bluez.LEAdvertisement1"), .string("Nope")])
        expectError("org.freedesktop.DBus.Error.InvalidArgs", "org.freedesktop.DBus.Properties", "GetAll", [.string("org.example.Missing")])
        expectError("org.freedesktop.DBus.Error.InvalidArgs", "org.freedesktop.DBus.Properties", "GetAll", [.uint32(3)])
        expectError("org.freedesktop.DBus.Error.PropertyReadOnly", "org.freedesktop.DBus.Properties", "Set",
                    [.string("org.bluez.LEAdvertisement1"), .string("Type"), .variant(.string("broadcast"))])
        expectError("org.freedesktop.DBus.Error.UnknownObject", at: "/org/peerlink/other", "org.freedesktop.DBus.Properties", "GetAll", [.string("org.bluez.LEAdvertisement1")])
        expectError("org.freedesktop.DBus.Error.InvalidArgs", "org.bluez.LEAdvertisement1", "Release", [.string("x")])

        XCTAssertEqual(try client.call(dest, "/org/peerlink/test", "org.bluez.LEAdvertisement1", "Release"), [])
        XCTAssertEqual(releases.value, 2)  // once with the bad argument, once without

        server.unexport("/org/peerlink/test")
        expectError("org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Properties", "GetAll", [.string("org.bluez.LEAdvertisement1")])
    }

    /// The RegisterAdvertisement pattern: A calls B, and B reads A's exported properties
    /// before it answers. A must answer B while A's caller waits for B.
    func testCallWhoseCalleeCallsBackCompletes() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let a = try DBusObjectServer(address: bus.address)
        defer { a.stop() }
        let b = try DBusObjectServer(address: bus.address)
        defer { b.stop() }
        a.export("/a", DBusExportedObject(properties: ["org.example.A": ["Name": .string("from A")]], methods: [:]))
        let aName = a.uniqueName
        let bCallsBack = try DBusConnection(address: bus.address)
        b.export("/b", DBusExportedObject(properties: [:], methods: ["org.example.B.Register": { args in
            guard case let .objectPath(p)? = args.first else { return .failure(.call(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "want a path")) }
            do {
                let props = try bCallsBack.call(aName, p, "org.freedesktop.DBus.Properties", "GetAll", [.string("org.example.A")])
                return .success([.string(props.first?.dictionary["Name"]?.string ?? "?")])
            } catch {
                return .failure(.call(name: "org.example.Failed", message: "\(error)"))
            }
        }]))
        let r = try a.call(b.uniqueName, "/b", "org.example.B", "Register", [.objectPath("/a"), .emptyArray(elementSignature: "{sv}")], timeoutMillis: 5000)
        XCTAssertEqual(r, [.string("from A")])
        // An error reply travels back as a DBusFailure with its name and message.
        XCTAssertThrowsError(try a.call(b.uniqueName, "/b", "org.example.B", "Register", [.string("x")])) { e in
            XCTAssertEqual(e as? DBusFailure, .call(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "want a path"))
        }
    }

    /// Empty arrays carry their element type: the bus checks `a{ss}` for this method.
    func testEmptyArraysAreWrittenWithTheirElementType() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let c = try DBusConnection(address: bus.address)
        XCTAssertEqual(try c.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "UpdateActivationEnvironment",
                                  [.emptyArray(elementSignature: "{ss}")]), [])
        XCTAssertThrowsError(try c.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "UpdateActivationEnvironment",
                                        [.array([])])) { e in
            XCTAssertTrue("\(e)".contains("InvalidArgs"), "\(e)")
        }
        XCTAssertEqual(DBusConnection.signature(.propertyDictionary([:])), "a{sv}")
        XCTAssertEqual(DBusConnection.signature(.bytes([])), "ay")
    }

    func testStopEndsTheConnectionAndFailsLaterCalls() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let s = try DBusObjectServer(address: bus.address)
        s.stop()
        s.stop()  // idempotent
        XCTAssertTrue(s.isDisconnected)
        XCTAssertThrowsError(try s.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames")) { e in
            guard case .busUnavailable? = e as? DBusFailure else { return XCTFail("unexpected \(e)") }
        }
    }

    func testBusGoingAwayIsNoticed() throws {
        let bus = try PrivateBus()
        let s = try DBusObjectServer(address: bus.address)
        defer { s.stop() }
        bus.stop()
        let deadline = Date().addingTimeInterval(10)
        while !s.isDisconnected && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(s.isDisconnected)
    }

    /// Connections are watched on the I/O loop: sixteen of them, each with a signal handled,
    /// start no thread each (at most the blocking pool's few, which run their handlers).
    func testConnectionsDoNotEachStartAThread() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let before = ProcessThreads.count()
        var servers: [DBusObjectServer] = []
        defer { for s in servers { s.stop() } }
        for _ in 0..<16 { servers.append(try DBusObjectServer(address: bus.address)) }
        // Each answers a call, so each has read from its socket.
        for s in servers { _ = try s.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId") }
        let during = ProcessThreads.count()
        XCTAssertLessThanOrEqual(during - before, BlockingPool.shared.maxThreads, "threads before: \(before), with 16 connections: \(during)")
    }

    func testAdvertiserWithoutBluetoothdIsAClearError() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let advert = try BluetoothAdvert(peerID: try PeerID(bytes: (1...20).map { UInt8($0) }), rfcommChannel: 3, l2capPSM: 0x1001)
        let adv = BlueZAdvertiser(service: try ServiceType("field-demo"), advert: advert, busAddress: bus.address) { n in print("notice: \(n)") }
        XCTAssertThrowsError(try adv.start()) { e in
            XCTAssertEqual(e as? BlueZError, .daemonNotRunning)
            XCTAssertTrue("\(e)".contains("bluetoothd is not running"), "\(e)")
        }
        adv.stop()
        adv.stop()

        let noBus = BlueZAdvertiser(service: try ServiceType("field-demo"), advert: advert, busAddress: "unix:path=/nonexistent/peerlink.sock") { _ in }
        XCTAssertThrowsError(try noBus.start()) { e in
            guard case .busUnavailable? = e as? BlueZError else { return XCTFail("unexpected \(e)") }
        }
    }

    func testAdvertisementDataIsTheServiceDataOnly() throws {
        let service = try ServiceType("field-demo")
        let advert = try BluetoothAdvert(peerID: try PeerID(bytes: (1...20).map { UInt8($0) }), rfcommChannel: 3, l2capPSM: 0x1001)
        let props = BlueZAdvertiser(service: service, advert: advert) { _ in }.advertisementProperties
        // No UUID list, name or TX power: Flags + the service data fill the 31 bytes (§14.2).
        XCTAssertEqual(Set(props.keys), ["Type", "Discoverable", "ServiceData"])
        XCTAssertEqual(props["Type"], .string("peripheral"))
        XCTAssertEqual(props["Discoverable"], .bool(true), "found by discovery whatever the adapter's setting")
        let sd = try XCTUnwrap(props["ServiceData"]).dictionary
        XCTAssertEqual(Array(sd.keys), [BluetoothServiceUUID.string(for: service)])
        XCTAssertEqual(sd.values.first?.bytes, advert.encode())
    }
}

final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func increment() { lock.withLock { n += 1 } }
    var value: Int { lock.withLock { n } }
}
