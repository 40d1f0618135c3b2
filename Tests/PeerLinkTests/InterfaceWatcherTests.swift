import Foundation
import XCTest
@testable import PeerLink
#if canImport(Glibc)
import Glibc
#endif

/// The netlink watch's read step: everything queued is read without blocking, and a socket
/// that ends says so (the watch then stops instead of spinning on it).
final class InterfaceWatcherDrainTests: XCTestCase {
    func testDrainReadsEverythingThenReportsQuietOrClosed() throws {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0 else { throw XCTSkip("socketpair: errno \(errno)") }
        defer { close(fds[0]) }
        XCTAssertEqual(InterfaceWatcher.drain(fds[0]), .quiet)
        for i in 0..<3 {
            var b = UInt8(i)
            XCTAssertEqual(write(fds[1], &b, 1), 1)
        }
        XCTAssertEqual(InterfaceWatcher.drain(fds[0]), .changed)
        XCTAssertEqual(InterfaceWatcher.drain(fds[0]), .quiet, "all three were read")
        close(fds[1])
        XCTAssertEqual(InterfaceWatcher.drain(fds[0]), .closed)
    }
}
