import XCTest
import PeerLink

/// `run` scopes: what a scope starts is stopped when it ends, whether the body returns or
/// throws — the listener closed, the advertisement withdrawn, the peer told the session ended.
final class ScopedLifetimeTests: XCTestCase {
    private struct Oops: Error {}

    func testEverythingStartedInTheScopesStopsWhenTheyEnd() async throws {
        let net = MemoryNetwork()
        let discovery = MemoryDiscovery()
        let service = try ServiceType("scopes")
        let bID = Identity()
        let b = try Node(identity: bID, displayName: "b", transports: [MemoryTransport(network: net, address: bID.peerID.description)])
        let sb = Session(node: b)
        let browser = Browser(node: b, service: service, discovery: discovery)
        try await browser.start()
        let a = try Node(identity: Identity(), displayName: "a", transports: [TCPTransport()])
        let aMem = try Node(identity: a.identity, displayName: "a", transports: [MemoryTransport(network: net, address: a.peerID.description)])
        var tcpPort: UInt16 = 0

        // A TCP listener in a scope that throws: closed afterwards.
        do {
            _ = try await a.run { node in
                tcpPort = try await node.start()[.tcp] ?? 0
                throw Oops()
            }
            XCTFail("the body's error comes out of the scope")
        } catch is Oops {}
        XCTAssertNotEqual(tcpPort, 0)
        let dialled = try? await TCPTransport().connect(to: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: tcpPort), timeout: .seconds(5))
        dialled?.close()
        XCTAssertNil(dialled, "nothing listens on \(tcpPort) after the scope")

        // An advertiser and a session in scopes: the peer found it, joined, and is told when
        // the session's scope ends; the browser then loses it when the advertiser's ends.
        let seen = Arrivals<DiscoveryEvent>()
        let watching = Task { for await e in browser.events { _ = seen.append(e) } }
        try await aMem.run { node in
            try await Advertiser(node: node, service: service, discovery: discovery).run { adv in
                try await Session(node: node).run { session in
                    let accepting = Task { for await i in adv.invitations { i.accept(into: session) } }
                    defer { accepting.cancel() }
                    let listed = await waitUntil(timeout: 10) { !seen.values.isEmpty }
                    guard listed, case let .found(peer) = seen.values[0] else { return XCTFail("not found: \(seen.values)") }
                    try await browser.invite(peer, to: sb, timeout: .seconds(10))
                    let joined = await waitUntil(timeout: 10) { await sb.connectedPeers() == [node.peerID] }
                    XCTAssertTrue(joined, "b joined a's session")
                }
            }
        }
        let left = await waitUntil(timeout: 10) { await sb.connectedPeers().isEmpty }
        XCTAssertTrue(left, "a's session ended with its scope and b was told")
        let lost = await waitUntil(timeout: 10) { seen.values.last == .lost(aMem.peerID) }
        XCTAssertTrue(lost, "the advertisement was withdrawn with its scope: \(seen.values)")
        browser.stop()
        watching.cancel()
    }
}
