import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth

/// The link manager: one invitation, a link on every path of the peer, later paths picked
/// up, dead paths redialled, and crossed invitations ending in one session.
final class LinkManagerTests: XCTestCase {
    func testPathSelection() {
        let bt1 = TransportEndpoint(medium: .rfcomm, host: "00:AA:01:01:00:01", port: 3)
        let bt1l2 = TransportEndpoint(medium: .l2cap, host: "00:aa:01:01:00:01", port: 0x1001)
        let v4a = TransportEndpoint(medium: .tcp, host: "10.0.0.2", port: 7000)
        let v4b = TransportEndpoint(medium: .tcp, host: "10.1.0.2", port: 7000)
        let v6 = TransportEndpoint(medium: .tcp, host: "fe80::1%2", port: 7000)
        let all: Set<Medium> = [.tcp, .rfcomm, .l2cap]
        let eps = [v4a, v6, bt1, v4b, bt1l2, v4a]
        XCTAssertEqual(LinkPaths.select(eps, policy: .bluetoothFirst, media: all).map(\.endpoint), [bt1, v4a, v4b],
                       "Bluetooth first; one path per device and per IPv4 address; IPv6 only without IPv4")
        XCTAssertEqual(LinkPaths.select(eps, policy: .wifiFirst, media: all).map(\.endpoint), [v4a, v4b, bt1])
        XCTAssertEqual(LinkPaths.select(eps, policy: .bluetoothOnly, media: all).map(\.endpoint), [bt1])
        XCTAssertEqual(LinkPaths.select(eps, policy: .ipOnly, media: all).map(\.endpoint), [v4a, v4b])
        XCTAssertEqual(LinkPaths.select(eps, policy: .bluetoothFirst, media: [.tcp]).map(\.endpoint), [v4a, v4b],
                       "media without a transport are skipped")
        XCTAssertEqual(LinkPaths.select([v6], policy: .bluetoothFirst, media: all).map(\.endpoint), [v6])
    }

    struct Pair {
        let net: MemoryNetwork
        let a: Node, b: Node
        let sa: Session, sb: Session
        let asked: Counter
        let aInfo: PeerInfo
    }

    /// Node a advertises over an emulated Bluetooth and an emulated IP medium; b dials.
    func pair(policy: LinkPolicy = LinkPolicy(), advertiseB: Bool = false) async throws -> Pair {
        let net = MemoryNetwork()
        func node(_ name: String) throws -> Node {
            try Node(identity: Identity(), displayName: name, transports: [
                MemoryTransport(network: net, address: "\(name)-bt", emulating: .rfcomm),
                MemoryTransport(network: net, address: "\(name)-ip", emulating: .tcp)])
        }
        let a = try node("a"), b = try node("b")
        var config = SessionConfig()
        config.keepaliveInterval = .milliseconds(200)
        config.deadAfter = .milliseconds(800)
        let sa = Session(node: a, config: config, policy: policy), sb = Session(node: b, config: config, policy: policy)
        let asked = Counter()
        for (n, s) in [(a, sa)] + (advertiseB ? [(b, sb)] : []) {
            let adv = Advertiser(node: n, service: try ServiceType("links"), discovery: MemoryDiscovery())
            try await adv.start()
            Task { for await i in adv.invitations { asked.increment(); i.accept(into: s) } }
        }
        let info = PeerInfo(peerID: a.peerID, displayName: "a", info: [:], endpoints: [
            TransportEndpoint(medium: .tcp, host: "a-ip", port: 0), TransportEndpoint(medium: .rfcomm, host: "a-bt", port: 0)])
        return Pair(net: net, a: a, b: b, sa: sa, sb: sb, asked: asked, aInfo: info)
    }

    func media(_ s: Session) async -> [Medium] {
        (await s.links()).first?.links.map(\.medium).sorted { $0.rawValue < $1.rawValue } ?? []
    }

    func waitUntil(_ seconds: Double, _ condition: () async -> Bool) async throws -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if await condition() { return true }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        return await condition()
    }

    func testOneInvitationLinksEveryPathWithoutAskingAgain() async throws {
        let p = try await pair()
        try await p.b.invite(p.aInfo, to: p.sb, timeout: .seconds(5))
        let both = try await waitUntil(5) { await self.media(p.sb) == [.rfcomm, .tcp] }
        let seen = await media(p.sb)
        XCTAssertTrue(both, "b has a Bluetooth and an IP link: \(seen)")
        let mediaA = await media(p.sa)
        XCTAssertEqual(mediaA, [.rfcomm, .tcp])
        XCTAssertEqual(p.asked.value, 1, "the application answered one invitation; the second link joined by itself")
        let (first, _, _) = (await p.sb.links()).first.map { ($0.links.first?.medium, 0, 0) } ?? (nil, 0, 0)
        XCTAssertEqual(first, .rfcomm, "bluetooth-first dials Bluetooth first although IP was advertised first")
        let peersA = await p.sa.connectedPeers()
        XCTAssertEqual(peersA, [p.b.peerID], "one peer with two links")
    }

    func testAPathThatDiesIsRedialled() async throws {
        let p = try await pair()
        try await p.b.invite(p.aInfo, to: p.sb, timeout: .seconds(5))
        _ = try await waitUntil(5) { await self.media(p.sb) == [.rfcomm, .tcp] }
        let before = Set((await p.sb.links()).first?.links.map(\.id) ?? [])
        p.net.cut("a-ip")  // the IP link goes silent and the address unreachable...
        try await Task.sleep(nanoseconds: 1_200_000_000)
        p.net.restore("a-ip")  // ...then it is back in range
        let replaced = try await waitUntil(8) {
            let now = (await p.sb.links()).first?.links ?? []
            return now.count == 2 && now.contains { $0.medium == .tcp && !before.contains($0.id) }
        }
        XCTAssertTrue(replaced, "a fresh IP link replaced the dead one")
        XCTAssertEqual(p.asked.value, 1)
        try await p.sb.send(Array("still here".utf8), to: [p.a.peerID])
        let got = try await waitFor(p.sa, timeout: 5) { e -> String? in
            if case let .message(_, bytes, _) = e { return String(decoding: bytes, as: UTF8.self) }; return nil
        }
        XCTAssertEqual(got, "still here")
    }

    func testAPathFoundLaterIsAdded() async throws {
        let p = try await pair()
        var btOnly = p.aInfo
        btOnly.endpoints = [TransportEndpoint(medium: .rfcomm, host: "a-bt", port: 0)]
        try await p.b.invite(btOnly, to: p.sb, timeout: .seconds(5))
        // The manager has gone over its paths and settled on dialling nothing: the Bluetooth
        // path has its link and it knows no other (only a new event could make it dial).
        let manager = p.sb.manager(for: p.a.peerID)
        let looked = try await waitUntil(5) {
            let checks = await manager.checks, settled = await manager.settled
            return checks >= 1 && settled
        }
        XCTAssertTrue(looked, "the link manager never settled")
        let dialledBefore = await manager.dialled
        XCTAssertEqual(dialledBefore, [], "nothing dialled while only the linked Bluetooth path is known")
        let linked = await manager.linkedPaths
        XCTAssertEqual(linked, ["bluetooth/A-BT"], "the manager knows the first link's path is linked")
        let onlyBT = await media(p.sb)
        XCTAssertEqual(onlyBT, [.rfcomm])
        // Discovery now also reports the peer on IP (Wi-Fi came in range).
        await p.sb.update(p.aInfo)
        let both = try await waitUntil(5) { await self.media(p.sb) == [.rfcomm, .tcp] }
        XCTAssertTrue(both)
        let dialledAfter = await manager.dialled
        XCTAssertEqual(dialledAfter, ["tcp/a-ip"], "the new path, once")
        XCTAssertEqual(p.asked.value, 1)
    }

    func testUnreachablePathIsReportedAndRetriedWithBackoff() async throws {
        let p = try await pair()
        var info = p.aInfo
        info.endpoints.append(TransportEndpoint(medium: .tcp, host: "nowhere", port: 0))
        try await p.b.invite(info, to: p.sb, timeout: .seconds(5))
        let failure = try await waitFor(p.sb, timeout: 5) { e -> Duration? in
            if case let .linkAttemptFailed(_, endpoint, _, retryIn) = e, endpoint.host == "nowhere" { return retryIn }; return nil
        }
        XCTAssertEqual(failure, .seconds(1), "first retry after 1 s")
        let second = try await waitFor(p.sb, timeout: 5) { e -> Duration? in
            if case let .linkAttemptFailed(_, endpoint, _, retryIn) = e, endpoint.host == "nowhere" { return retryIn }; return nil
        }
        XCTAssertEqual(second, .seconds(2), "then 2 s")
    }

    func testCrossedInvitationsEndInOneSession() async throws {
        let p = try await pair(advertiseB: true)
        let bInfo = PeerInfo(peerID: p.b.peerID, displayName: "b", info: [:], endpoints: [TransportEndpoint(medium: .rfcomm, host: "b-bt", port: 0)])
        var aBT = p.aInfo
        aBT.endpoints = [TransportEndpoint(medium: .rfcomm, host: "a-bt", port: 0)]
        // 200 ms each way: both invitations are surely under way before either arrives, even
        // on a loaded machine (without it, one could land before the other node started
        // dialling, and then asking the application is right).
        for address in ["a-bt", "b-bt"] { p.net.setConditions(MemoryLinkConditions(delay: .milliseconds(200)), for: address) }
        async let x: Void = p.a.invite(bInfo, to: p.sa, timeout: .seconds(5))
        async let y: Void = p.b.invite(aBT, to: p.sb, timeout: .seconds(5))
        _ = try await (x, y)
        XCTAssertEqual(p.asked.value, 0, "neither application was asked: each had invited the other")
        // The winner's link only (a surplus link from the loser's side, if its invitation was
        // already under way, is closed at once).
        let single = try await waitUntil(3) {
            let la = await p.sa.links(), lb = await p.sb.links()
            return la.first?.links.count == 1 && lb.first?.links.count == 1
        }
        XCTAssertTrue(single, "one link each")
        let peersA = await p.sa.connectedPeers(), peersB = await p.sb.connectedPeers()
        XCTAssertEqual(peersA, [p.b.peerID])
        XCTAssertEqual(peersB, [p.a.peerID])
        try await p.sa.send(Array("hi b".utf8), to: [p.b.peerID])
        try await p.sb.send(Array("hi a".utf8), to: [p.a.peerID])
        let gotB = try await waitFor(p.sb, timeout: 5) { e -> String? in
            if case let .message(_, bytes, _) = e { return String(decoding: bytes, as: UTF8.self) }; return nil
        }
        let gotA = try await waitFor(p.sa, timeout: 5) { e -> String? in
            if case let .message(_, bytes, _) = e { return String(decoding: bytes, as: UTF8.self) }; return nil
        }
        XCTAssertEqual(gotB, "hi b")
        XCTAssertEqual(gotA, "hi a")
    }
}
