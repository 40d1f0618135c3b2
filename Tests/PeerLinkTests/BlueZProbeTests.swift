import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkDBus
@testable import PeerLinkBluetooth

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

    /// A bluetoothd that owns its name but never answers (stopped, or stuck) is named as such,
    /// not as libdbus's paragraph about possible causes.
    func testBluetoothdThatDoesNotAnswerIsAClearError() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let silent = try DBusConnection(address: bus.address)  // never reads its socket
        let owned = try silent.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                                    [.string("org.bluez"), .uint32(4)])
        XCTAssertEqual(owned.first, .uint32(1), "the silent connection is org.bluez's primary owner")
        XCTAssertThrowsError(try BlueZObjects.adapters(try DBusConnection(address: bus.address), timeoutMillis: 300)) { e in
            XCTAssertEqual(e as? BlueZError, .noAnswer)
            XCTAssertTrue("\(e)".hasPrefix("bluetoothd is running but did not answer in time"), "\(e)")
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

/// A dbus-daemon on a socket in a temporary directory, stopped by `stop()`. Ready once the
/// bus answers: a client has said Hello and had a reply to ListNames.
final class PrivateBus {
    struct StartFailure: Error, CustomStringConvertible { let description: String }

    let address: String
    private let process = Process()
    private let dir: URL

    init(within seconds: Double = 10) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon") else { throw XCTSkip("dbus-daemon is not installed") }
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-bus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        address = "unix:path=\(dir.path)/bus.sock"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--nofork", "--nopidfile", "--address=\(address)"]
        process.standardOutput = FileHandle.nullDevice
        let log = Pipe()
        process.standardError = log
        try process.run()
        // Neither the socket file (it appears at bind(), before listen(), and a client
        // connecting then is refused) nor the printed address says the daemon serves clients:
        // a call answered does.
        // Each attempt runs on a thread of its own: connecting to a daemon that accepted the
        // socket but does not speak blocks in libdbus's authentication with no timeout. Past
        // the deadline the daemon is killed, which ends such an attempt too.
        let deadline = Date().addingTimeInterval(seconds)
        var last = "no attempt yet"
        while true {
            let attempt = Attempt()
            let address = self.address
            Thread {
                do {
                    let c = try DBusConnection(address: address)
                    _ = try c.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames", timeoutMillis: 2000)
                    attempt.finish(nil)
                } catch {
                    attempt.finish("\(error)")
                }
            }.start()
            switch attempt.wait(until: deadline) {
            case .some(nil): return
            case let .some(why?): last = why
            case .none: last = "an attempt was still waiting for the daemon"
            }
            guard process.isRunning, Date() < deadline else {
                let running = process.isRunning
                stop()
                let stderr = running ? "" : Self.readWaiting(log.fileHandleForReading.fileDescriptor)
                throw StartFailure(description: "private dbus-daemon at \(address) " + (running ? "gave no answer to ListNames within \(seconds) s"
                    : "exited (\(process.terminationStatus)): \(stderr)") + "; last attempt: \(last)")
            }
            usleep(20_000)
        }
    }

    /// One readiness attempt's outcome: nil when the bus answered, else why not.
    private final class Attempt: @unchecked Sendable {
        private let condition = NSCondition()
        private var outcome: String??
        func finish(_ why: String?) { condition.withLock { outcome = .some(why); condition.broadcast() } }
        /// The outcome, or nil (`.none`) if the attempt has not ended by `deadline`.
        func wait(until deadline: Date) -> String?? {
            condition.withLock {
                while outcome == nil, condition.wait(until: deadline) {}
                return outcome
            }
        }
    }

    /// What can be read from `fd` now, without waiting.
    private static func readWaiting(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65536 {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 0) == 1 else { break }
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// SIGKILL, not SIGTERM: a daemon started from a Swift concurrency (dispatch worker)
    /// thread inherits that thread's signal mask, which blocks SIGTERM, and would never exit
    /// (an async test then spun in `waitUntilExit` forever). The wait for its exit is bounded
    /// too (5 s).
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning, Date() < deadline { usleep(10_000) }
        }
        try? FileManager.default.removeItem(at: dir)
    }
}
