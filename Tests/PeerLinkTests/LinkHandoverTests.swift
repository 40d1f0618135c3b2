import Foundation
import XCTest
@testable import PeerLink

/// One peer, two links (an emulated Bluetooth and an emulated Wi-Fi link): the policy picks
/// the carrier, and when it dies the session moves to the other link without losing,
/// duplicating or reordering a reliable message.
final class LinkHandoverTests: XCTestCase {
    struct TwoLinks {
        let net: MemoryNetwork
        let a: Node, b: Node
        let sa: Session, sb: Session
    }

    /// Links come up in `order` (the first medium's link first).
    func twoLinkPair(policy: LinkPolicy, order: [Medium] = [.rfcomm, .tcp]) async throws -> TwoLinks {
        let net = MemoryNetwork()
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [
            MemoryTransport(network: net, address: "a-bt", emulating: .rfcomm),
            MemoryTransport(network: net, address: "a-ip", emulating: .tcp)])
        let b = try Node(identity: Identity(), displayName: "beta", transports: [
            MemoryTransport(network: net, address: "b-bt", emulating: .rfcomm),
            MemoryTransport(network: net, address: "b-ip", emulating: .tcp)])
        var config = SessionConfig()
        config.keepaliveInterval = 200
        config.deadAfter = 800
        let sa = Session(node: a, config: config, policy: policy), sb = Session(node: b, config: config, policy: policy)
        let adv = Advertiser(node: a, service: try ServiceType("handover"), discovery: MemoryDiscovery())
        try await adv.start()
        Task { for await i in adv.invitations { i.accept(into: sa) } }
        let viaIP = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .tcp, host: "a-ip", port: 0)])
        let viaBT = PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .rfcomm, host: "a-bt", port: 0)])
        for m in order { try await b.invite(m == .tcp ? viaIP : viaBT, to: sb, timeout: 5) }
        return TwoLinks(net: net, a: a, b: b, sa: sa, sb: sb)
    }

    func carrier(_ s: Session) async -> (Medium?, String?, Int) {
        let peers = await s.links()
        let links = peers.first?.links ?? []
        let active = links.first { !$0.carries.isEmpty }
        return (active?.medium, active?.reason, links.count)
    }

    func testBluetoothFirstCarriesOnBluetoothAndFallsBackWithoutLoss() async throws {
        let p = try await twoLinkPair(policy: LinkPolicy(.bluetoothFirst))
        let (medium, reason, count) = await carrier(p.sb)
        XCTAssertEqual(count, 2, "both links joined one channel (same session token)")
        XCTAssertEqual(medium, .rfcomm)
        XCTAssertEqual(reason, "Bluetooth first")
        let peers = await p.sb.connectedPeers()
        XCTAssertEqual(peers, [p.a.peerID], "one peer, not two")

        let total = 3000
        let receiver = Task { () -> [Int] in
            var got: [Int] = []
            for await e in p.sa.events {
                if case let .message(_, bytes, .reliable) = e { got.append(Int(String(decoding: bytes, as: UTF8.self)) ?? -1) }
                if got.count == total { break }
            }
            return got
        }
        for i in 0..<total {
            if i == total / 3 { p.net.cut("a-bt") }  // the Bluetooth radio goes silent mid-stream
            try await p.sb.send(Array("\(i)".utf8), to: [p.a.peerID])
            if i % 200 == 0 { try await Task.sleep(nanoseconds: 20_000_000) }
        }
        let got = await receiver.value
        XCTAssertEqual(got, Array(0..<total), "exactly once, in order, across the handover")
        let (after, why, left) = await carrier(p.sb)
        XCTAssertEqual(after, .tcp)
        XCTAssertEqual(left, 1)
        XCTAssertTrue(why?.contains("fallback") ?? false, "\(String(describing: why))")
    }

    func testUpgradeToBluetoothAfterTheDwellTime() async throws {
        var policy = LinkPolicy(.bluetoothFirst)
        policy.dwellMillis = 600
        let p = try await twoLinkPair(policy: policy, order: [.tcp, .rfcomm])
        let (first, why, _) = await carrier(p.sb)
        XCTAssertEqual(first, .tcp, "a link that just came up does not take over at once")
        XCTAssertTrue(why?.hasPrefix("kept") ?? false, "\(String(describing: why))")
        let moved = try await waitFor(p.sb, timeout: 5) { e -> String? in
            if case let .carrierChanged(_, _, reason) = e, reason == "Bluetooth first" { return reason }; return nil
        }
        XCTAssertEqual(moved, "Bluetooth first")
        let (now, _, _) = await carrier(p.sb)
        XCTAssertEqual(now, .rfcomm)
    }

    func testWifiFirstPrefersIP() async throws {
        let p = try await twoLinkPair(policy: LinkPolicy(.wifiFirst), order: [.tcp, .rfcomm])
        let (medium, reason, _) = await carrier(p.sb)
        XCTAssertEqual(medium, .tcp)
        XCTAssertEqual(reason, "Wi-Fi first")
    }
}
