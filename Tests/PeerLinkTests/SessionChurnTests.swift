import Foundation
import XCTest
@testable import PeerLink

/// A node that runs unattended for weeks sees peers join and leave thousands of times: what a
/// departed peer used (sockets, channels, link managers) must go with it. The lab runs the
/// same check over Bluetooth (BluetoothLabTests.test0PeersComeAndGoOverL2CAPAndRFCOMM).
final class SessionChurnTests: XCTestCase {
    func testPeersThatComeAndGoLeaveNoSocketsOrChannelsBehind() async throws {
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let b = try Node(identity: Identity(), displayName: "beta", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let ports = try await a.start()
        let port = try XCTUnwrap(ports[.tcp])
        try await assertVisitsLeaveNothing(alpha: a, beta: b, at: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: port),
                                           visits: 25)
    }
}

/// Open file descriptors of this process.
func openDescriptors() -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
}

/// `beta` visits `alpha` (already listening at `endpoint`) `visits + 1` times: a fresh session
/// joins alpha's long-lived one, a message goes each way, beta disconnects and drops its
/// session, and alpha must report beta gone. Afterwards, no socket of the visits may be open,
/// alpha's session must hold no channel or link manager, and no channel or session of a visit
/// may still be in memory. The first visit warms up what stays for the process (datagram
/// sockets, dispatch sources) and is not counted.
func assertVisitsLeaveNothing(alpha a: Node, beta b: Node, at endpoint: TransportEndpoint, visits: Int,
                              config: SessionConfig = SessionConfig(), timeout: Double = 10,
                              log: @escaping @Sendable (String) -> Void = { _ in },
                              file: StaticString = #filePath, line: UInt = #line) async throws {
    let sa = Session(node: a, config: config)
    let adv = Advertiser(node: a, service: try ServiceType("churn"), discovery: MemoryDiscovery())
    try await adv.start()
    let accepter = Task { for await i in adv.invitations { i.accept(into: sa) } }
    defer { accepter.cancel() }
    let info = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [endpoint])
    let departures = Departures()
    let watcher = Task {
        for await e in sa.events {
            if case .peerStateChanged(_, _, .notConnected) = e { await departures.add() }
        }
    }
    defer { watcher.cancel() }
    let channels = Weak<PeerChannel>(), sessions = Weak<Session>()

    func visit(_ n: Int) async throws {
        let sb = Session(node: b, config: config)
        try await b.invite(info, to: sb, timeout: .seconds(timeout))
        let joined = await waitUntil(timeout: timeout) { sa.registry.channel(for: b.peerID) != nil }
        XCTAssertTrue(joined, "visit \(n): beta's channel never appeared at alpha", file: file, line: line)
        if let c = sa.registry.channel(for: b.peerID) { channels.add(c) }
        try await sb.send(Array("hello \(n)".utf8), to: [a.peerID])
        try await sa.send(Array("welcome \(n)".utf8), to: [b.peerID])
        let reply = try await waitFor(sb, timeout: timeout) { e -> String? in
            if case let .message(_, bytes, _) = e { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }
        XCTAssertEqual(reply, "welcome \(n)", file: file, line: line)
        await sb.disconnect()
        sessions.add(sb)
        let left = await departures.wait(count: n, timeout: timeout)
        XCTAssertTrue(left, "visit \(n): alpha did not see beta leave", file: file, line: line)
    }

    try await visit(1)
    let settled = openDescriptors()
    log("after the first visit: \(settled) descriptors open")
    for n in 2...(visits + 1) { try await visit(n) }

    // Every visit opened at least two sockets (one each side); they must all be closed.
    var open = openDescriptors()
    for _ in 0..<Int(timeout * 10) where open > settled {
        try await Task.sleep(nanoseconds: 100_000_000)
        open = openDescriptors()
    }
    log("after \(visits) more visits: \(open) descriptors open")
    XCTAssertLessThanOrEqual(open, settled, "\(open - settled) descriptors still open after \(visits) visits", file: file, line: line)
    let peers = await sa.connectedPeers()
    XCTAssertEqual(peers, [], "alpha's session still counts a departed peer", file: file, line: line)
    XCTAssertTrue(sa.registry.all().isEmpty, "alpha's session still holds \(sa.registry.all().count) channels", file: file, line: line)
    XCTAssertEqual(sa.linkManagerCount, 0, "alpha's session still holds a link manager of a departed peer", file: file, line: line)
    // Nothing (a task, a timer, a link) keeps a departed peer's channel alive.
    let released = await waitUntil(timeout: timeout) { channels.alive == 0 }
    XCTAssertTrue(released, "\(channels.alive) of \(visits + 1) channels of departed peers are still in memory", file: file, line: line)
    // Beta's sessions, disconnected and dropped, are freed too.
    let freed = await waitUntil(timeout: timeout) { sessions.alive == 0 }
    XCTAssertTrue(freed, "\(sessions.alive) of \(visits + 1) disconnected sessions are still in memory", file: file, line: line)
    await sa.disconnect()
}

/// Peers that left, counted as the session reports them.
private actor Departures {
    private var count = 0

    func add() { count += 1 }

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
