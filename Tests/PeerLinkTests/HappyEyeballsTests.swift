import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth

/// Paths are dialled in parallel, staggered: a first path that swallows traffic costs the
/// stagger, not its whole handshake timeout.
final class HappyEyeballsTests: XCTestCase {
    func testAStalledFirstPathDoesNotHoldUpTheInvitation() async throws {
        let net = MemoryNetwork()
        // Path "a-slow" answers nothing in time: every message takes 30 s to arrive.
        net.conditions = ["a-slow": MemoryLinkConditions(delay: .seconds(30))]
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [
            MemoryTransport(network: net, address: "a-slow", emulating: .tcp),
            MemoryTransport(network: net, address: "a-fast", emulating: .rfcomm)])
        let b = try Node(identity: Identity(), displayName: "beta", transports: [
            MemoryTransport(network: net, address: "b-slow", emulating: .tcp),
            MemoryTransport(network: net, address: "b-fast", emulating: .rfcomm)])
        let sa = Session(node: a), sb = Session(node: b, policy: LinkPolicy(.wifiFirst))
        let adv = Advertiser(node: a, service: try ServiceType("eyeballs"), discovery: MemoryDiscovery())
        try await adv.start()
        Task { for await i in adv.invitations { i.accept(into: sa) } }
        // wifi-first ranks the stalled TCP path first.
        let info = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [
            TransportEndpoint(medium: .tcp, host: "a-slow", port: 0), TransportEndpoint(medium: .rfcomm, host: "a-fast", port: 0)])
        let started = Date()
        try await b.invite(info, to: sb, timeout: .seconds(20))
        let took = Date().timeIntervalSince(started)
        let links = await sb.links().first?.links ?? []
        XCTAssertEqual(links.map(\.medium), [.rfcomm], "the second path won")
        // Dialled one after the other, the stalled path would hold the invitation for its
        // 10 s handshake timeout first.
        XCTAssertLessThan(took, 8, "the stalled path did not hold up the invitation")
    }

    func testEveryFailureIsReportedWhenNoPathWorks() async throws {
        let net = MemoryNetwork()
        let b = try Node(identity: Identity(), displayName: "beta", transports: [MemoryTransport(network: net, address: "b", emulating: .tcp)])
        let sb = Session(node: b)
        let info = PeerInfo(peerID: try Identity().peerID, displayName: "ghost", info: [:], endpoints: [
            TransportEndpoint(medium: .tcp, host: "nobody-1", port: 0), TransportEndpoint(medium: .tcp, host: "nobody-2", port: 0)])
        do {
            try await b.invite(info, to: sb, timeout: .seconds(5))
            XCTFail("nobody listens")
        } catch let PeerLinkError.unreachable(_, failures) {
            // Each attempt is reported with its endpoint and a reason to switch on; its text
            // keeps the transport's own words.
            XCTAssertEqual(Set(failures.compactMap(\.endpoint)), Set(info.endpoints), "\(failures)")
            XCTAssertEqual(failures.map(\.reason), [.refused, .refused], "\(failures)")
            XCTAssertTrue(failures.allSatisfy { $0.description.contains("Connection refused") }, "\(failures)")
        }
    }
}

/// The side that was invited keeps links up too, once it knows the peer's paths.
final class BothSidesMaintainLinksTests: XCTestCase {
    func testTheInvitedSideAddsAPathItLearnsOf() async throws {
        let net = MemoryNetwork()
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [
            MemoryTransport(network: net, address: "a-bt", emulating: .rfcomm),
            MemoryTransport(network: net, address: "a-ip", emulating: .tcp)])
        let b = try Node(identity: Identity(), displayName: "beta", transports: [
            MemoryTransport(network: net, address: "b-bt", emulating: .rfcomm),
            MemoryTransport(network: net, address: "b-ip", emulating: .tcp)])
        _ = try await b.start()
        let sa = Session(node: a), sb = Session(node: b)
        let adv = Advertiser(node: a, service: try ServiceType("both-sides"), discovery: MemoryDiscovery())
        try await adv.start()
        Task { for await i in adv.invitations { i.accept(into: sa) } }
        // b knows only a's Bluetooth path, so b's own link manager has nothing more to dial.
        try await b.invite(PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:],
                                    endpoints: [TransportEndpoint(medium: .rfcomm, host: "a-bt", port: 0)]), to: sb, timeout: .seconds(5))
        // The inviter's invite returns on the acceptance; the invited side adds the link just
        // after sending it, so wait for that before telling it more.
        let joined = await waitUntil(timeout: 10) { (await sa.links().first?.links.count ?? 0) == 1 }
        XCTAssertTrue(joined, "the invited side has the Bluetooth link")
        // a learns b's record (as its browser would): it dials b's IP path itself, and not
        // b's Bluetooth path, which already has a link.
        await sa.update(PeerInfo(peerID: b.peerID, displayName: "beta", info: [:], endpoints: [
            TransportEndpoint(medium: .rfcomm, host: "b-bt", port: 0), TransportEndpoint(medium: .tcp, host: "b-ip", port: 0)]))
        let two = await waitUntil(timeout: 10) { (await sa.links().first?.links.count ?? 0) == 2 }
        XCTAssertTrue(two, "the invited side added the IP path")
        let media = Set(await sa.links().first?.links.map(\.medium) ?? [])
        XCTAssertEqual(media, [.rfcomm, .tcp])
        // a's manager has settled (it went over its paths with both known, dials nothing and
        // waits for no retry): the only path a ever dialled is b's IP path.
        let manager = sa.manager(for: b.peerID)
        let settled = await waitUntil(timeout: 10) { await manager.settled }
        XCTAssertTrue(settled, "a's link manager never settled")
        let dialled = await manager.dialled
        XCTAssertEqual(dialled, ["tcp/b-ip"], "no second link on the path that already had one")
        let linked = await manager.linkedPaths
        XCTAssertEqual(linked, ["bluetooth/B-BT", "tcp/b-ip"], "a counts the Bluetooth link it was invited over as that path's link")
        let still = await sa.links().first?.links.count
        XCTAssertEqual(still, 2)
    }
}
