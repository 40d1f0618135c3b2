import Foundation
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth

/// Waits for the first session event that `match` turns into a value; fails the test naming
/// `what` if none comes within `timeout` seconds.
func waitFor<T: Sendable>(_ session: Session, timeout: Double = 10, _ what: String = "a matching session event",
                          file: StaticString = #filePath, line: UInt = #line,
                          _ match: @escaping @Sendable (Session.Event) -> T?) async throws -> T {
    try await within(timeout, what, file: file, line: line) { () -> T in
        for await e in session.events { if let v = match(e) { return v } }
        throw CancellationError()
    }
}

/// The first `n` values that `match` makes of `session`'s events, in order. If they do not all
/// come within `seconds`, the test fails saying how many of the `what` arrived and the last one.
func collect<T: Sendable>(_ n: Int, _ what: String, from session: Session, within seconds: Double,
                          file: StaticString = #filePath, line: UInt = #line,
                          _ match: @escaping @Sendable (Session.Event) -> T?) async throws -> [T] {
    let got = Arrivals<T>()
    return try await within(seconds, "\(n) \(what)", progress: { got.summary(of: n) }, file: file, line: line) { () -> [T] in
        for await e in session.events {
            guard let v = match(e) else { continue }
            if got.append(v) >= n { return got.values }
        }
        throw CancellationError()
    }
}

/// The first `n` reliable messages of `session`, read as decimal numbers (-1 for anything else).
func collectNumbers(_ n: Int, from session: Session, within seconds: Double,
                    file: StaticString = #filePath, line: UInt = #line) async throws -> [Int] {
    try await collect(n, "reliable messages", from: session, within: seconds, file: file, line: line) { e -> Int? in
        guard case let .message(_, bytes, .reliable) = e else { return nil }
        return Int(String(decoding: bytes, as: UTF8.self)) ?? -1
    }
}

/// Values collected so far by a bounded wait, for its failure message.
final class Arrivals<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    /// Appends `v`; returns how many there are now.
    func append(_ v: T) -> Int { lock.withLock { items.append(v); return items.count } }
    var values: [T] { lock.withLock { items } }
    func summary(of n: Int) -> String {
        lock.withLock {
            guard let last = items.last else { return "none of \(n) arrived" }
            return "\(items.count) of \(n) arrived, the last: \(String(describing: last).prefix(120))"
        }
    }
}

/// Whether `condition` holds within `timeout` seconds (polled every 50 ms).
func waitUntil(timeout: Double, _ condition: () async -> Bool) async -> Bool {
    await eventually(within: timeout, condition)
}

/// Two nodes with their sessions, connected through an advertiser/browser pair.
struct Pair {
    let a: Node, b: Node
    let sa: Session, sb: Session
    let peerA: PeerInfo
}

func connectedPair(transportA: Transport, transportB: Transport, discovery: Discovery,
                   config: SessionConfig = SessionConfig()) async throws -> Pair {
    let a = try Node(identity: Identity(), displayName: "alpha", transports: [transportA])
    let b = try Node(identity: Identity(), displayName: "beta", transports: [transportB])
    let sa = Session(node: a, config: config), sb = Session(node: b, config: config)
    let service = try ServiceType("test-svc")
    let adv = Advertiser(node: a, service: service, info: try DiscoveryInfo(["role": "sensor"]), discovery: discovery)
    try await adv.start()
    Task { for await inv in adv.invitations { inv.accept(into: sa) } }
    let browser = Browser(node: b, service: service, discovery: discovery)
    try await browser.start()
    let aID = a.peerID
    let peerA = try await within(10, "the browser finding alpha") { () -> PeerInfo in
        for await e in browser.events { if case let .found(p) = e, p.peerID == aID { return p } }
        throw PeerLinkError.notConnected(aID)
    }
    XCTAssertEqual(peerA.info["role"], "sensor")
    try await browser.invite(peerA, to: sb, context: Array("hello".utf8), timeout: .seconds(5))
    browser.stop()
    return Pair(a: a, b: b, sa: sa, sb: sb, peerA: peerA)
}

struct TwoLinks {
    let net: MemoryNetwork
    let a: Node, b: Node
    let sa: Session, sb: Session
}

/// Two nodes over an emulated Bluetooth (`bluetooth`) and an emulated Wi-Fi (TCP) link, one
/// session: links come up in `order` (the first medium's link first).
func twoLinkPair(policy: LinkPolicy, order: [Medium] = [.rfcomm, .tcp], bluetooth: Medium = .rfcomm,
                 conditions: [String: MemoryLinkConditions] = [:]) async throws -> TwoLinks {
    let net = MemoryNetwork()
    net.conditions = conditions
    let a = try Node(identity: Identity(), displayName: "alpha", transports: [
        MemoryTransport(network: net, address: "a-bt", emulating: bluetooth),
        MemoryTransport(network: net, address: "a-ip", emulating: .tcp)])
    let b = try Node(identity: Identity(), displayName: "beta", transports: [
        MemoryTransport(network: net, address: "b-bt", emulating: bluetooth),
        MemoryTransport(network: net, address: "b-ip", emulating: .tcp)])
    var config = SessionConfig()
    config.keepaliveInterval = .milliseconds(200)
    config.deadAfter = .milliseconds(800)
    let sa = Session(node: a, config: config, policy: policy), sb = Session(node: b, config: config, policy: policy)
    let adv = Advertiser(node: a, service: try ServiceType("handover"), discovery: MemoryDiscovery())
    try await adv.start()
    Task { for await i in adv.invitations { i.accept(into: sa) } }
    let viaIP = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .tcp, host: "a-ip", port: 0)])
    let viaBT = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: bluetooth, host: "a-bt", port: 0)])
    for m in order { try await b.invite(m == .tcp ? viaIP : viaBT, to: sb, timeout: .seconds(5)) }
    return TwoLinks(net: net, a: a, b: b, sa: sa, sb: sb)
}
