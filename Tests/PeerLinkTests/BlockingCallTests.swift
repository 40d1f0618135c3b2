import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif
@testable import PeerLink

/// Calls that block for seconds (a discovery backend's publish, a dial that hangs) run where
/// blocking is allowed, so a node keeps connecting and answering meanwhile.
///
/// The tests are synchronous: they wait on the test's own thread, never on the cooperative
/// pool, which a blocking call there would hold. Timeouts only end a failing run; the checks
/// are about order (the reply came while every slow call was still blocked).
final class BlockingCallTests: XCTestCase {
    /// More callers than the cooperative pool has threads (one per core).
    static let crowd = ProcessInfo.processInfo.activeProcessorCount * 2 + 2

    func testSessionAnswersWhileAdvertisersPublishSlowly() throws {
        let pair = try run("connect a pair", timeout: 20) {
            try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                    discovery: LoopbackDiscovery())
        }
        let slow = GatedDiscovery()
        defer { slow.release() }  // a failing run must not leave publishes blocked
        let host = try Node(identity: Identity(), displayName: "slow", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let n = Self.crowd
        let advertisers = Collected<Advertiser>()
        for i in 0..<n {
            Task.detached {
                let adv = Advertiser(node: host, service: try ServiceType("slow\(i)"), discovery: slow)
                do { try await adv.start(); advertisers.add(adv) } catch { advertisers.fail("\(error)") }
            }
        }
        XCTAssertTrue(slow.waitUntilEntered(n, timeout: 20),
                      "only \(slow.entered) of \(n) publishes got under way: the others wait for a thread that a blocked publish holds")

        // Every publish is blocked now: the pair still completes a round trip.
        XCTAssertNoThrow(try run("round trip while \(n) publishes block", timeout: 20) { try await exchange(pair) })
        XCTAssertEqual(slow.returned, 0, "a publish returned before the release")

        slow.release()
        XCTAssertTrue(advertisers.wait(count: n, timeout: 20), "advertisers started after the release: \(advertisers.count) of \(n)")
        XCTAssertEqual(advertisers.failures, [])
        let all = advertisers.items
        _ = try run("stop the advertisers", timeout: 20) { for a in all { await a.stop() } }
        XCTAssertEqual(slow.stopped, n, "every publication was withdrawn")
    }

    func testSessionConnectsAndAnswersWhileManyDialsHang() throws {
        let hole = try StalledListener()
        defer { hole.close() }
        // GCD's global queue runs one job per core and adds about one thread a second while
        // its jobs block: enough dials that it cannot catch up within the wait below.
        let n = ProcessInfo.processInfo.activeProcessorCount * 2 + 64
        let dials = Collected<Bool>()
        let target = TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: hole.port)
        for _ in 0..<n {
            Task.detached {
                do {
                    let c = try await TCPTransport().connect(to: target, timeout: .seconds(120))
                    c.close()
                    dials.add(true)
                } catch {
                    dials.fail("\(error)")
                }
            }
        }
        let hanging = hole.waitForHangingDials(n, orFinished: { dials.count + dials.failures.count > 0 }, timeout: 20)
        XCTAssertEqual(hanging, n, "dials under way at once; each should wait in the I/O loop, none for a thread")

        // While every dial hangs, two other nodes find each other, connect over TCP and talk.
        do {
            let finishedMeanwhile = try run("connect and round trip while \(n) dials hang", timeout: 20) { () -> Int in
                let pair = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                                   discovery: LoopbackDiscovery())
                try await exchange(pair)
                return dials.count + dials.failures.count
            }
            XCTAssertEqual(finishedMeanwhile, 0, "the pair connected and answered only after hanging dials had finished")
        } catch {
            XCTFail("\(error)")
        }

        hole.release()
        XCTAssertTrue(dials.wait(count: n, timeout: 30), "dials connected after the release: \(dials.count) of \(n)")
        XCTAssertEqual(dials.failures, [], "the hanging dials were waiting on the stalled listener")
    }

    func testRunsOnThePoolAndPassesErrorsOn() async throws {
        let name = await BlockingCall.run("pl.test.call") {
            (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        }
        XCTAssertTrue(name.hasPrefix("pl.pool."), "ran on \(name), not on the blocking pool")
        do {
            try await BlockingCall.run("pl.test.fail") { () throws(TransportError) -> Void in throw .closed }
            XCTFail("must throw")
        } catch {
            XCTAssertEqual("\(error)", "\(TransportError.closed)")
        }
    }

    func testALongLivedLoopGetsANamedThreadOfItsOwn() async throws {
        let name = AsyncStream<String>.makeStream()
        BlockingCall.thread("pl.test.loop") {
            name.continuation.yield((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
        }
        var got = ""
        for await n in name.stream { got = n; break }
        XCTAssertEqual(got.trimmingCharacters(in: .whitespacesAndNewlines), "pl.test.loop")
    }

    // MARK: - Helpers

    /// Runs `body` on a task and waits for it on this thread; throws after `timeout` seconds.
    private func run<T: Sendable>(_ what: String, timeout: Double, _ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = Collected<T>()
        Task.detached {
            do { outcome.add(try await body()) } catch { outcome.fail("\(error)") }
        }
        guard outcome.wait(count: 1, orFailure: true, timeout: timeout) else {
            throw TestFailure("\(what): nothing within \(timeout) s")
        }
        if let first = outcome.items.first { return first }
        throw TestFailure("\(what): \(outcome.failures.joined(separator: "; "))")
    }
}

/// A message from b to a and a reply.
private func exchange(_ p: Pair) async throws {
    try await p.sb.send(Array("ping".utf8), to: [p.a.peerID])
    _ = try await waitFor(p.sa) { e -> Bool? in if case let .message(_, b, _) = e, b == Array("ping".utf8) { return true }; return nil }
    try await p.sa.send(Array("pong".utf8), to: [p.b.peerID])
    _ = try await waitFor(p.sb) { e -> Bool? in if case let .message(_, b, _) = e, b == Array("pong".utf8) { return true }; return nil }
}

private struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Values and failures gathered from tasks, awaited from a plain thread.
private final class Collected<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var values: [T] = []
    private var errors: [String] = []

    func add(_ v: T) { condition.withLock { values.append(v); condition.broadcast() } }
    func fail(_ why: String) { condition.withLock { errors.append(why); condition.broadcast() } }
    var items: [T] { condition.withLock { values } }
    var count: Int { condition.withLock { values.count } }
    var failures: [String] { condition.withLock { errors } }

    /// Waits until `count` values (or values and failures) arrived; false after `timeout`.
    func wait(count: Int, orFailure: Bool = false, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        return condition.withLock {
            while values.count + (orFailure ? errors.count : 0) < count {
                if !condition.wait(until: deadline) { return false }
            }
            return true
        }
    }
}

/// A discovery backend whose publish blocks until `release()`, as a D-Bus call to a slow
/// daemon does.
private final class GatedDiscovery: Discovery, @unchecked Sendable {
    private let condition = NSCondition()
    private var open = false
    private var counts = (entered: 0, returned: 0, stopped: 0)

    var entered: Int { condition.withLock { counts.entered } }
    var returned: Int { condition.withLock { counts.returned } }
    var stopped: Int { condition.withLock { counts.stopped } }

    struct Handle: DiscoveryHandle {
        let onStop: @Sendable () -> Void
        func stop() { onStop() }
    }

    func publish(_ advertisement: Advertisement, service: ServiceType, ports: [Medium: UInt16],
                 notices: @escaping @Sendable (String) -> Void) throws -> DiscoveryHandle {
        // Blocks until `release()`, or 60 s at most: a run that fails before it releases must
        // not keep a thread blocked for the rest of the process.
        let deadline = Date().addingTimeInterval(60)
        condition.withLock {
            counts.entered += 1
            condition.broadcast()
            while !open, condition.wait(until: deadline) {}
            counts.returned += 1
        }
        return Handle { [self] in condition.withLock { counts.stopped += 1 } }
    }

    func browse(_ service: ServiceType, handler: @escaping @Sendable (DiscoveryEvent) -> Void) throws -> DiscoveryHandle {
        Handle {}
    }

    /// Waits until `n` publishes are blocked; false after `timeout`.
    func waitUntilEntered(_ n: Int, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        return condition.withLock {
            while counts.entered < n {
                if !condition.wait(until: deadline) { return false }
            }
            return true
        }
    }

    func release() { condition.withLock { open = true; condition.broadcast() } }
}

/// A loopback TCP listener that never accepts, with a backlog of 0 that one connection fills:
/// the kernel drops further SYNs, so dials to it hang in SYN_SENT until `release()` makes
/// room (only loopback traffic).
private final class StalledListener {
    let fd: Int32
    let port: UInt16
    private var fillers: [Int32] = []

    init() throws {
        let bound = try BoundSocket(host: "127.0.0.1", port: 0, type: Int32(SOCK_STREAM.rawValue), protocolName: "TCP", reuseAddress: false)
        fd = bound.fd
        port = bound.port
        guard Glibc.listen(fd, 0) == 0 else { throw TestFailure("listen: \(String(cString: strerror(errno)))") }
        // Connect until one connection does not complete: the queue is full from then on.
        while fillers.count < 8 {
            let s = try Self.startConnect(port: port)
            if Self.completes(s, within: 300) {
                fillers.append(s)
            } else {
                Glibc.close(s)
                guard !fillers.isEmpty else { break }
                return
            }
        }
        close()
        throw XCTSkip("loopback connections to a full listen queue do not hang on this machine")
    }

    /// Starts a non-blocking connect to the listener.
    private static func startConnect(port: UInt16) throws -> Int32 {
        let address = try IPSocketAddress(host: "127.0.0.1", port: port)
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        _ = address.withSockaddr { Glibc.connect(s, $0, $1) }
        return s
    }

    private static func completes(_ s: Int32, within ms: Int32) -> Bool {
        var pfd = pollfd(fd: s, events: Int16(POLLOUT), revents: 0)
        guard poll(&pfd, 1, ms) == 1 else { return false }
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len)
        return err == 0
    }

    /// Sockets in SYN_SENT towards the listener, from /proc/net/tcp (read to its end: procfs
    /// files report no size, and Foundation's file reading stops after a page).
    func synSentCount() -> Int {
        let file = open("/proc/net/tcp", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return 0 }
        defer { Glibc.close(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let got = chunk.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
            if got < 0, errno == EINTR { continue }
            if got <= 0 { break }
            bytes += chunk[0..<got]
        }
        let table = String(decoding: bytes, as: UTF8.self)
        let remote = String(format: "0100007F:%04X", port)
        return table.split(separator: "\n").dropFirst().filter { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[2] == remote && fields[3] == "02"
        }.count
    }

    /// Waits until `n` dials hang in SYN_SENT, or one finished, or `timeout`; returns how many
    /// were hanging at the end.
    func waitForHangingDials(_ n: Int, orFinished finished: () -> Bool, timeout: Double) -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        while synSentCount() < n, !finished(), Date() < deadline { usleep(20_000) }
        return synSentCount()
    }

    /// Makes room in the queue: the hanging dials connect on their next SYN.
    func release() { _ = Glibc.listen(fd, 4096) }

    func close() {
        for f in fillers { Glibc.close(f) }
        fillers = []
        Glibc.close(fd)
    }
}
