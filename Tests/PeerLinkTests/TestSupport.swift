import Foundation
import XCTest
@testable import PeerLink

/// Waits for the first session event that `match` turns into a value.
func waitFor<T: Sendable>(_ session: Session, timeout: Double = 10, file: StaticString = #filePath, line: UInt = #line,
                          _ match: @escaping @Sendable (Session.Event) -> T?) async throws -> T {
    let result = await withTaskGroup(of: T?.self) { group -> T? in
        group.addTask {
            for await e in session.events { if let v = match(e) { return v } }
            return nil
        }
        group.addTask {
            try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
    guard let result else {
        XCTFail("no matching session event within \(timeout) s", file: file, line: line)
        throw CancellationError()
    }
    return result
}

/// Whether `condition` holds within `timeout` seconds (polled every 50 ms).
func waitUntil(timeout: Double, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: 50_000_000)
    }
    return await condition()
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
    var found: PeerInfo?
    for await e in browser.events {
        if case let .found(p) = e, p.peerID == a.peerID { found = p; break }
    }
    guard let peerA = found else { throw PeerLinkError.notConnected(a.peerID) }
    XCTAssertEqual(peerA.info["role"], "sensor")
    try await browser.invite(peerA, to: sb, context: Array("hello".utf8), timeout: 5)
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
    config.keepaliveInterval = 200
    config.deadAfter = 800
    let sa = Session(node: a, config: config, policy: policy), sb = Session(node: b, config: config, policy: policy)
    let adv = Advertiser(node: a, service: try ServiceType("handover"), discovery: MemoryDiscovery())
    try await adv.start()
    Task { for await i in adv.invitations { i.accept(into: sa) } }
    let viaIP = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .tcp, host: "a-ip", port: 0)])
    let viaBT = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: bluetooth, host: "a-bt", port: 0)])
    for m in order { try await b.invite(m == .tcp ? viaIP : viaBT, to: sb, timeout: 5) }
    return TwoLinks(net: net, a: a, b: b, sa: sa, sb: sb)
}
