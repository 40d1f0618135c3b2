import Foundation
import XCTest
@testable import PeerLink

/// A node that runs unattended for weeks sees peers join and leave thousands of times: what a
/// departed peer used (sockets, channels, link managers) must go with it.
final class SessionChurnTests: XCTestCase {
    /// Open file descriptors of this process.
    static func openDescriptors() -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
    }

    func testPeersThatComeAndGoLeaveNoSocketsOrChannelsBehind() async throws {
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let b = try Node(identity: Identity(), displayName: "beta", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let ports = try await a.start()
        let port = try XCTUnwrap(ports[.tcp])
        let sa = Session(node: a)
        let adv = Advertiser(node: a, service: try ServiceType("churn"), discovery: MemoryDiscovery())
        try await adv.start()
        Task { for await i in adv.invitations { i.accept(into: sa) } }
        let info = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:],
                            endpoints: [TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port)])
        let departures = Departures()
        let channels = Weak<PeerChannel>(), sessions = Weak<Session>()
        Task {
            for await e in sa.events {
                if case let .peerStateChanged(p, _, .notConnected) = e { await departures.add(p) }
            }
        }

        /// One visit: join, a message each way, leave; returns once alpha saw beta go.
        func visit(_ n: Int) async throws {
            let sb = Session(node: b)
            try await b.invite(info, to: sb, timeout: 5)
            let joined = await waitUntil { sa.registry.channel(for: b.peerID) != nil }
            XCTAssertTrue(joined, "visit \(n): beta's channel never appeared at alpha")
            if let c = sa.registry.channel(for: b.peerID) { channels.add(c) }
            try await sb.send(Array("hello \(n)".utf8), to: [a.peerID])
            try await sa.send(Array("welcome \(n)".utf8), to: [b.peerID])
            let reply = try await waitFor(sb) { e -> String? in
                if case let .message(_, bytes, _) = e { return String(decoding: bytes, as: UTF8.self) }
                return nil
            }
            XCTAssertEqual(reply, "welcome \(n)")
            await sb.disconnect()
            sessions.add(sb)
            let left = await departures.wait(count: n, timeout: 10)
            XCTAssertTrue(left, "visit \(n): alpha did not see beta leave")
        }

        try await visit(1)  // warms up what stays for the process (UDP sockets, dispatch sources)
        let settled = Self.openDescriptors()
        let visits = 25
        for n in 2...(visits + 1) { try await visit(n) }

        // Every visit opened at least two sockets (one each side); they must all be closed.
        var open = Self.openDescriptors()
        for _ in 0..<50 where open > settled {
            try await Task.sleep(nanoseconds: 100_000_000)
            open = Self.openDescriptors()
        }
        XCTAssertLessThanOrEqual(open, settled, "\(open - settled) descriptors still open after \(visits) visits")
        let peers = await sa.connectedPeers()
        XCTAssertEqual(peers, [], "alpha's session still counts a departed peer")
        XCTAssertTrue(sa.registry.all().isEmpty, "alpha's session still holds \(sa.registry.all().count) channels")
        XCTAssertEqual(sa.linkManagerCount, 0, "alpha's session still holds a link manager of a departed peer")
        // Nothing (a task, a timer, a link) keeps a departed peer's channel alive.
        let released = await waitUntil { channels.alive == 0 }
        XCTAssertTrue(released, "\(channels.alive) of \(visits + 1) channels of departed peers are still in memory")
        // Beta's sessions, disconnected and dropped, are freed too.
        let freed = await waitUntil { sessions.alive == 0 }
        XCTAssertTrue(freed, "\(sessions.alive) of \(visits + 1) disconnected sessions are still in memory")
    }
}

/// Whether `condition` holds within `timeout` seconds (polled every 50 ms).
private func waitUntil(timeout: Double = 10, _ condition: @Sendable () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: 50_000_000)
    }
    return await condition()
}

/// Peers that left, counted as the session reports them.
private actor Departures {
    private var count = 0

    func add(_ peer: PeerID) { count += 1 }

    /// Whether `target` departures were seen within `timeout` seconds.
    func wait(count target: Int, timeout: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while count < target, Date() < deadline { try? await Task.sleep(nanoseconds: 20_000_000) }
        return count >= target
    }
}

/// Objects held weakly: how many are still in memory.
private final class Weak<T: AnyObject>: @unchecked Sendable {
    private struct Ref { weak var object: T? }
    private let lock = NSLock()
    private var refs: [Ref] = []
    func add(_ o: T) { lock.withLock { refs.append(Ref(object: o)) } }
    var alive: Int { lock.withLock { refs.filter { $0.object != nil }.count } }
}
