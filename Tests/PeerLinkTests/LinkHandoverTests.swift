import Foundation
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth
import PeerLinkCore
import PeerLinkWire

/// One peer, two links (an emulated Bluetooth and an emulated Wi-Fi link): the policy picks
/// the carrier, and when it dies the session moves to the other link without losing,
/// duplicating or reordering a reliable message.
final class LinkHandoverTests: XCTestCase {
    /// The medium carrying `role` (reliable messages by default), its reason, and the link count.
    func carrier(_ s: Session, role: LinkRole = .reliable) async -> (Medium?, CarrierReason?, Int) {
        let peers = await s.links()
        let links = peers.first?.links ?? []
        let active = links.first { $0.carries.contains(role.rawValue) }
        return (active?.medium, active?.reasons[role], links.count)
    }

    func testBluetoothFirstCarriesOnBluetoothAndFallsBackWithoutLoss() async throws {
        let p = try await twoLinkPair(policy: LinkPolicy(.bluetoothFirst))
        let (medium, reason, count) = await carrier(p.sb)
        XCTAssertEqual(count, 2, "both links joined one channel (same session token)")
        XCTAssertEqual(medium, .rfcomm)
        XCTAssertEqual(reason, CarrierReason(.bluetoothFirst))
        let peers = await p.sb.connectedPeers()
        XCTAssertEqual(peers, [p.a.peerID], "one peer, not two")

        let total = 3000
        async let receiver = collectNumbers(total, from: p.sa, within: 60)
        try await within(60, "sending \(total) messages") {
            for i in 0..<total {
                if i == total / 3 { p.net.cut("a-bt") }  // the Bluetooth radio goes silent mid-stream
                try await p.sb.send(Array("\(i)".utf8), to: [p.a.peerID])
                if i % 200 == 0 { try await Task.sleep(nanoseconds: 20_000_000) }
            }
        }
        let got = try await receiver
        XCTAssertEqual(got, Array(0..<total), "exactly once, in order, across the handover")
        // The silent link is suspected within ~0.4 s (traffic moves at once) and declared dead
        // after deadAfter (0.8 s here); then the policy itself falls back.
        var (after, why, left) = await carrier(p.sb)
        for _ in 0..<40 where left > 1 {
            try await Task.sleep(nanoseconds: 100_000_000)
            (after, why, left) = await carrier(p.sb)
        }
        XCTAssertEqual(after, .tcp)
        XCTAssertEqual(left, 1)
        XCTAssertEqual(why?.rule, .fallbackNoBluetooth, "\(String(describing: why))")
    }

    func testMessageCopiesAreListedAndNothingArrivesTwiceAcrossASilentCut() async throws {
        var policy = LinkPolicy(.bluetoothFirst)
        policy.copyMessages = true
        let p = try await twoLinkPair(policy: policy)
        let peers = await p.sb.links()
        let copy = peers.first?.links.first { $0.carries.contains("reliable-copy") }
        XCTAssertEqual(copy?.medium, .tcp, "Wi-Fi gets the copies while Bluetooth carries")
        guard case .messageCopy(_, next: .fallbackNoBluetooth)? = copy?.messageCopyReason?.rule else {
            return XCTFail("\(String(describing: copy?.messageCopyReason))")
        }
        XCTAssertEqual(peers.first?.links.first { $0.carries.contains("reliable") }?.medium, .rfcomm)

        let total = 2000
        async let receiver = collectNumbers(total, from: p.sa, within: 60)
        try await within(60, "sending \(total) messages") {
            for i in 0..<total {
                if i == total / 2 { p.net.cut("a-bt") }
                try await p.sb.send(Array("\(i)".utf8), to: [p.a.peerID])
                if i % 100 == 0 { try await Task.sleep(nanoseconds: 10_000_000) }
            }
        }
        let got = try await receiver
        XCTAssertEqual(got, Array(0..<total), "each message once, in order, though most arrived twice")
    }

    func testUpgradeToBluetoothAfterTheDwellTime() async throws {
        var policy = LinkPolicy(.bluetoothFirst)
        policy.dwell = .milliseconds(600)
        let p = try await twoLinkPair(policy: policy, order: [.tcp, .rfcomm])
        let (first, why, _) = await carrier(p.sb)
        XCTAssertEqual(first, .tcp, "a link that just came up does not take over at once")
        XCTAssertNotNil(why?.kept, "\(String(describing: why))")
        let moved = try await waitFor(p.sb, timeout: 5, "the carrier moving to Bluetooth") { e -> CarrierReason? in
            if case let .carrierChanged(_, _, .reliable, reason) = e, reason.rule == .bluetoothFirst { return reason }; return nil
        }
        XCTAssertEqual(moved.description, "Bluetooth first")
        let (now, _, _) = await carrier(p.sb)
        XCTAssertEqual(now, .rfcomm)
    }

    func testWifiFirstPrefersIP() async throws {
        let p = try await twoLinkPair(policy: LinkPolicy(.wifiFirst), order: [.tcp, .rfcomm])
        let (medium, reason, _) = await carrier(p.sb)
        XCTAssertEqual(medium, .tcp)
        XCTAssertEqual(reason?.rule, .wifiFirst)
    }

    func testBulkGoesOnTheFastLinkAndAResourceSurvivesItsLoss() async throws {
        let p = try await twoLinkPair(policy: LinkPolicy(.bluetoothFirst), conditions: [
            "a-bt": MemoryLinkConditions(bandwidth: 1_000_000), "a-ip": MemoryLinkConditions(bandwidth: 2_000_000)])
        async let bulkCarriers = collect(3, "bulk carrier changes", from: p.sb, within: 60) { e -> LinkID? in
            if case let .carrierChanged(_, link, .bulk, _) = e { return link }; return nil
        }
        // Bluetooth came up first and carried everything; the IP link takes bulk once it has
        // been up for the policy's dwell time (3 s).
        var (bulk, bulkWhy, _) = await carrier(p.sb, role: .bulk)
        for _ in 0..<60 where bulk != .tcp {
            try await Task.sleep(nanoseconds: 100_000_000)
            (bulk, bulkWhy, _) = await carrier(p.sb, role: .bulk)
        }
        let (reliable, _, _) = await carrier(p.sb, role: .reliable)
        XCTAssertEqual(reliable, .rfcomm, "messages stay on Bluetooth")
        XCTAssertEqual(bulk, .tcp, "bulk goes on the faster link")
        guard case .fastestForBulk? = bulkWhy?.rule else { return XCTFail("\(String(describing: bulkWhy))") }
        let ids = Dictionary(uniqueKeysWithValues: (await p.sb.links()).first?.links.map { ($0.medium, $0.id) } ?? [])

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("handover-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let src = dir + "/big.bin"
        var rng = seededGenerator(self)
        let content = Data((0..<3_000_000).map { _ in UInt8.random(in: 0...255, using: &rng) })
        try content.write(to: URL(fileURLWithPath: src))
        let inbox = dir + "/in"
        let receiver = Task { () -> (String?, String?) in
            for await e in p.sa.events {
                if case let .resourceOffered(o) = e { try? await p.sa.accept(o, into: inbox) }
                if case let .resourceFinished(prog, path, error) = e, prog.direction == .receiving { return (path, error.map { "\($0)" }) }
            }
            return (nil, "events ended")
        }
        let progress = ProgressLog()
        let sending = Task { try await p.sb.sendResource(at: src, to: p.a.peerID) { progress.add($0) } }
        // Cut the IP path once a third of the file is across.
        for _ in 0..<200 where (progress.last?.completed ?? 0) < 1_000_000 { try await Task.sleep(nanoseconds: 20_000_000) }
        XCTAssertGreaterThan(progress.last?.completed ?? 0, 0)
        p.net.cut("a-ip")
        try await within(60, "the 3 MB resource sent across the loss of the IP link") { try await sending.value }
        let (path, error) = try await within(10, "the receiver's resourceFinished") { await receiver.value }
        XCTAssertNil(error)
        XCTAssertEqual(path.flatMap { FileManager.default.contents(atPath: $0) }, content, "the whole file, verified, once")
        XCTAssertEqual(Set(progress.all.map(\.resumedFrom)), [0], "the transfer continued; it never restarted or resumed")
        let carriers = try await bulkCarriers
        XCTAssertEqual(carriers, [ids[.rfcomm], ids[.tcp], ids[.rfcomm]].compactMap { $0 }, "bulk: Bluetooth → IP → Bluetooth")
        let (after, _, _) = await carrier(p.sb, role: .bulk)
        XCTAssertEqual(after, .rfcomm)
    }
}
