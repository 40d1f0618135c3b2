import Foundation
import XCTest
@testable import PeerLink

/// BlueZ over D-Bus without Bluetooth: a missing bus and a bus without bluetoothd give clear
/// errors promptly; the D-Bus client reads and writes real messages through a private
/// dbus-daemon.
final class BlueZProbeTests: XCTestCase {
    func testNoBusIsAClearError() throws {
        let start = Date()
        XCTAssertThrowsError(try BlueZProbe.adapters(busAddress: "unix:path=/nonexistent/peerlink-test.sock")) { e in
            guard case .busUnavailable = e as? BlueZError else { return XCTFail("unexpected \(e)") }
            XCTAssertTrue("\(e)".hasPrefix("cannot reach the D-Bus system bus"), "\(e)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
    }

    func testBusWithoutBluetoothdIsAClearError() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        XCTAssertThrowsError(try BlueZProbe.adapters(busAddress: bus.address)) { e in
            XCTAssertEqual(e as? BlueZError, .daemonNotRunning)
            XCTAssertTrue("\(e)".contains("bluetoothd is not running"), "\(e)")
        }
    }

    func testCallsRoundTripValuesThroughTheBus() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let conn = try DBusConnection(address: bus.address)
        XCTAssertTrue(try conn.nameHasOwner("org.freedesktop.DBus"))
        XCTAssertFalse(try conn.nameHasOwner("org.bluez"))
        let names = try conn.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames")
        guard case let .array(items)? = names.first else { return XCTFail("ListNames gave \(names)") }
        XCTAssertTrue(items.contains(.string("org.freedesktop.DBus")))
        // A D-Bus error reply becomes a DBusFailure with the error's name.
        XCTAssertThrowsError(try conn.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", [.string("org.bluez")])) { e in
            XCTAssertTrue((e as? DBusFailure)?.isServiceUnknown ?? false, "\(e)")
        }
        // Containers and variants are written with the right signatures (the bus checks them).
        XCTAssertEqual(DBusConnection.signature(.array([.dictEntry(.string("k"), .variant(.bool(true)))])), "a{sv}")
        XCTAssertThrowsError(try conn.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
                                           [.array([.dictEntry(.string("k"), .variant(.uint16(3)))])])) { e in
            XCTAssertTrue("\(e)".contains("InvalidArgs") || "\(e)".contains("signature"), "\(e)")
        }
    }
}

/// A dbus-daemon on a socket in a temporary directory, stopped by `stop()`.
final class PrivateBus {
    let address: String
    private let process = Process()
    private let dir: URL

    init() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon") else { throw XCTSkip("dbus-daemon is not installed") }
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-bus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        address = "unix:path=\(dir.path)/bus.sock"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        // The daemon prints its address once it listens; the socket file alone appears at
        // bind(), before listen(), and a client connecting then is refused.
        process.arguments = ["--session", "--nofork", "--nopidfile", "--print-address=1", "--address=\(address)"]
        let ready = Pipe()
        process.standardOutput = ready
        try process.run()
        guard Self.readLine(from: ready.fileHandleForReading.fileDescriptor, within: 5) != nil else {
            stop(); throw XCTSkip("dbus-daemon did not start")
        }
    }

    /// The first line written to `fd`, or nil on end of file or after `seconds`.
    private static func readLine(from fd: Int32, within seconds: Double) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        var bytes: [UInt8] = []
        while Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) >= 0 else { return nil }
            guard pfd.revents != 0 else { continue }
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return nil
    }

    /// SIGKILL, not SIGTERM: a daemon started from a Swift concurrency (dispatch worker)
    /// thread inherits that thread's signal mask, which blocks SIGTERM, and would never exit
    /// (an async test then spun in `waitUntilExit` forever).
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: dir)
    }
}
