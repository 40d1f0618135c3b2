import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkDBus

/// `DBusObjectServer.addMatch` through a private dbus-daemon: each call returns promptly (its
/// reply is not lost to the dispatch thread, and it does not wait for the dispatch thread's
/// poll) and matched signals reach the handler.
final class DBusMatchTests: XCTestCase {
    func testAddMatchReturnsPromptlyAndSignalsArrive() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let server = try DBusObjectServer(address: bus.address)
        defer { server.stop() }
        let seen = LockedStrings()
        let handler: DBusObjectServer.SignalHandler = { _, _, member, args in
            if member == "NameOwnerChanged", case let .string(name)? = args.first { seen.append(name) }
        }
        // Before the fix, the bus's reply was popped and dropped by the dispatch thread and
        // a call waited out libdbus's 25 s timeout (every call in the lab, 3 of 3).
        let first = Date()
        for i in 0..<20 {
            let start = Date()
            try server.addMatch("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='org.peerlink.m\(i)'",
                                handler: handler)
            XCTAssertLessThan(Date().timeIntervalSince(start), 2, "AddMatch \(i) took \(Date().timeIntervalSince(start)) s")
        }
        // A call costs one round trip to the bus: it used to wait for the dispatch thread's
        // 100 ms read to time out (20 calls: 2.1 s).
        XCTAssertLessThan(Date().timeIntervalSince(first), 1, "20 AddMatch calls")
        XCTAssertThrowsError(try server.addMatch("type='nonsense'", handler: handler)) { e in
            XCTAssertTrue("\(e)".contains("MatchRuleInvalid"), "\(e)")
        }
        // A name taken on the bus: the handler hears NameOwnerChanged for it.
        let other = try DBusConnection(address: bus.address)
        _ = try other.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", [.string("org.peerlink.m7"), .uint32(0)])
        let deadline = Date().addingTimeInterval(5)
        while !seen.values.contains("org.peerlink.m7"), Date() < deadline { usleep(20_000) }
        XCTAssertEqual(seen.values, ["org.peerlink.m7"], "only the matched name")
    }
}

final class LockedStrings: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func append(_ s: String) { lock.withLock { items.append(s) } }
    var values: [String] { lock.withLock { items } }
}
