import Foundation
import Synchronization
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth
#if canImport(Glibc)
import Glibc
#endif

/// The Bluetooth listener's accept loop and the Bluetooth dial's non-blocking connect, on the
/// I/O loop. The host has no Bluetooth, so Unix sockets and pipes stand in for the listening
/// socket (the loop and the listener do not care which family a descriptor is); the VM lab
/// runs them on real RFCOMM and L2CAP sockets (BluetoothLabTests).
final class BluetoothListenerTests: XCTestCase {
    private func threads() -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("Threads:") {
            return Int(line.dropFirst(8).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }

    /// A pipe whose read end stands for a listening Bluetooth socket with nothing to accept: it
    /// never turns readable, and `shutdown` cannot wake a wait on it (as on a Bluetooth
    /// listener). The write end tells when the read end has been closed.
    private func idleListener() throws -> (listener: BluetoothListener, writeEnd: Int32, acceptCalls: AcceptCalls) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw XCTSkip("pipe: errno \(errno)") }
        let calls = AcceptCalls()
        let listener = BluetoothListener(
            fd: fds[0], port: 1,
            accept: { _ in calls.add(); return .init(fd: -1, error: EAGAIN, remote: "") },
            wrap: { _, _ in nil },
            onConnection: { _ in })
        return (listener, fds[1], calls)
    }

    /// Whether the pipe's read end is closed (the write end reports an error).
    private func readEndClosed(_ writeEnd: Int32) -> Bool {
        var p = pollfd(fd: writeEnd, events: Int16(POLLOUT), revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLERR) != 0
    }

    /// Connections made to a listening socket are accepted and delivered, each carrying what
    /// its client sent.
    func testAcceptsConnectionsAndDeliversThem() async throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw XCTSkip("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array("\0peerlink-bt-listener-\(getpid())".utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { p in for (i, b) in name.enumerated() { p[i] = b } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, listen(fd, 16) == 0 else { Glibc.close(fd); throw XCTSkip("bind/listen: errno \(errno)") }

        let accepted = AsyncStream<MessageConnection>.makeStream()
        let listener = BluetoothListener(
            fd: fd, port: 1,
            accept: { lfd in
                let c = Glibc.accept(lfd, nil, nil)
                return .init(fd: c, error: c < 0 ? errno : 0, remote: "unix")
            },
            wrap: { c, remote in FDConnection(fd: c, medium: .rfcomm, remoteDescription: remote, lengthPrefixed: true) },
            onConnection: { accepted.continuation.yield($0) })
        defer { listener.close() }

        var clients: [FDConnection] = []
        for i in 0..<3 {
            let c = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            let r = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(c, $0, length) } }
            XCTAssertEqual(r, 0, "client \(i) connects: errno \(errno)")
            let client = FDConnection(fd: c, medium: .rfcomm, remoteDescription: "listener", lengthPrefixed: true)
            client.enqueue([UInt8(i), 42])
            clients.append(client)
        }
        let received = try await within(30, "three connections accepted, each with its message") {
            var got: [[UInt8]] = []
            for await conn in accepted.stream {
                if let m = try await conn.receive() { got.append(m) }
                if got.count == 3 { break }
            }
            return got
        }
        XCTAssertEqual(Set(received), [[0, 42], [1, 42], [2, 42]])
        for c in clients { c.close() }
    }

    /// Closing a listener whose socket has nothing to accept ends its wait on the loop and
    /// closes the socket, although nothing ever makes the socket readable.
    func testCloseEndsTheAcceptWaitAndReleasesTheSocket() async throws {
        let (listener, writeEnd, calls) = try idleListener()
        defer { Glibc.close(writeEnd) }
        let tried = await eventually(within: 30) { calls.value >= 1 }
        XCTAssertTrue(tried, "the listener tried to accept")
        XCTAssertFalse(readEndClosed(writeEnd), "the socket stays open while the listener listens")
        listener.close()
        let released = await eventually(within: 30) { self.readEndClosed(writeEnd) }
        XCTAssertTrue(released, "the listening socket is closed after close()")
    }

    /// 64 listeners waiting to accept add no thread each (they wait on the I/O loop), and
    /// closing them all releases every socket.
    func testThreadsDoNotGrowWithListeners() async throws {
        let first = try idleListener()  // the I/O loop and its thread exist from here on
        first.listener.close()
        defer { Glibc.close(first.writeEnd) }
        let before = threads()
        var listeners: [(listener: BluetoothListener, writeEnd: Int32, acceptCalls: AcceptCalls)] = []
        for _ in 0..<64 { listeners.append(try idleListener()) }
        let waiting = await eventually(within: 60) { listeners.allSatisfy { $0.acceptCalls.value >= 1 } }
        XCTAssertTrue(waiting, "every listener tried to accept")
        let during = threads()
        XCTAssertLessThan(during - before, 16, "threads before: \(before), with 64 listeners: \(during)")
        for l in listeners { l.listener.close() }
        let released = await eventually(within: 60) { listeners.allSatisfy { self.readEndClosed($0.writeEnd) } }
        XCTAssertTrue(released, "every listening socket is closed")
        for l in listeners { Glibc.close(l.writeEnd) }
    }

    /// A connect the remote refuses, seen only when the loop reports the socket (SO_ERROR),
    /// says what users are told for a refused Bluetooth connect.
    func testRefusedConnectKeepsItsExplanation() async throws {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard probe >= 0 else { throw XCTSkip("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        // A port just bound and released: nothing listens there.
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) } }
        Glibc.close(probe)
        let remote = address, remoteLength = length

        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { Glibc.close(fd) }
        let what = "RFCOMM connect to 00:AA:01:01:00:01 channel 3"
        do {
            try await within(30, "the refused connect ends") {
                try await BluetoothSocket.connect(fd: fd, timeout: 30, what: what, adapter: nil) {
                    withUnsafePointer(to: remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, remoteLength) } }
                }
            }
            XCTFail("connected to a port nobody listens on")
        } catch let e as TransportError {
            XCTAssertEqual("\(e)", "\(BluetoothSocket.explain(ECONNREFUSED, operation: what))")
        }
    }
}

/// A count shared with a listener's accept closure.
private final class AcceptCalls: Sendable {
    private let n = Mutex(0)
    func add() { n.withLock { $0 += 1 } }
    var value: Int { n.withLock { $0 } }
}
