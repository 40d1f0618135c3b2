import Foundation
import XCTest
@testable import PeerLinkDaemon
#if canImport(Glibc)
import Glibc
#endif

/// sd_notify over a real datagram socket bound where systemd would bind it.
final class SystemdNotifyTests: XCTestCase {
    private func listener(_ path: String) throws -> Int32 {
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let r = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(r, 0, String(cString: strerror(errno)))
        return fd
    }

    private func receive(_ fd: Int32, waiting seconds: Double = 5) -> String? {
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : nil
    }

    func testStatesReachTheSocketSystemdNames() throws {
        let path = NSTemporaryDirectory() + "peerlink-notify-\(getpid()).sock"
        let fd = try listener(path)
        defer { close(fd); unlink(path) }
        let notify = SystemdNotify(environment: ["NOTIFY_SOCKET": path])
        XCTAssertTrue(notify.send("READY=1\nSTATUS=advertising"))
        XCTAssertEqual(receive(fd), "READY=1\nSTATUS=advertising")
        XCTAssertTrue(notify.send("STOPPING=1"))
        XCTAssertEqual(receive(fd), "STOPPING=1")
    }

    func testTheWatchdogBeatsAtHalfItsTimeoutAndOnlyWhileHealthy() async throws {
        let path = NSTemporaryDirectory() + "peerlink-watchdog-\(getpid()).sock"
        let fd = try listener(path)
        defer { close(fd); unlink(path) }
        let notify = SystemdNotify(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "40000", "WATCHDOG_PID": "\(getpid())"])
        XCTAssertEqual(notify.watchdogInterval, .milliseconds(20))
        let beats = Task { await notify.keepWatchdog() }
        XCTAssertEqual(receive(fd), "WATCHDOG=1")
        XCTAssertEqual(receive(fd), "WATCHDOG=1")
        beats.cancel()
        await beats.value
        while receive(fd, waiting: 0.1) != nil {}  // a beat sent as it was cancelled

        let stuck = Task { await notify.keepWatchdog(healthy: { false }) }
        XCTAssertNil(receive(fd, waiting: 0.2), "no keepalive while the daemon is not healthy")
        stuck.cancel()
        await stuck.value

        XCTAssertNil(SystemdNotify(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "40000", "WATCHDOG_PID": "1"]).watchdogInterval,
                     "a watchdog meant for another process is not ours")
    }

    func testOutsideSystemdNothingIsSent() async {
        let notify = SystemdNotify(environment: [:])
        XCTAssertNil(notify.socketPath)
        XCTAssertFalse(notify.send("READY=1"))
        await notify.keepWatchdog()  // returns at once
    }
}
