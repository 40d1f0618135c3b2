import Foundation
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth
import PeerLinkCore
import PeerLinkWire

/// The upgrade end to end on the in-memory network: a session on an emulated (slow) Bluetooth
/// link negotiates a group link when a file starts, bulk moves to it, and every way it can go
/// wrong leaves the Bluetooth session as it was.
final class LinkUpgradeSessionTests: XCTestCase {
    struct Setup {
        let net: MemoryNetwork
        let a: Node, b: Node
        let sa: Session, sb: Session
        let ua: MemoryUpgrader, ub: MemoryUpgrader
        let timeline: Timeline
        let dir: String
    }

    /// Upgrade steps and link changes seen by both sessions, in order.
    final class Timeline: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [(side: String, event: Session.Event)] = []
        func add(_ side: String, _ e: Session.Event) { lock.withLock { items.append((side, e)) } }
        func steps(_ side: String) -> [UpgradeEvent] {
            lock.withLock { items.compactMap { if $0.side == side, case let .linkUpgrade(_, u) = $0.event { return u }; return nil } }
        }
        func linksUp(_ side: String, _ medium: Medium) -> [LinkID] {
            lock.withLock { items.compactMap { if $0.side == side, case let .linkChanged(_, l, m, true, _) = $0.event, m == medium { return l }; return nil } }
        }
        func bulkCarriers(_ side: String) -> [LinkID] {
            lock.withLock { items.compactMap { if $0.side == side, case let .carrierChanged(_, l, .bulk, _) = $0.event { return l }; return nil } }
        }
    }

    func makePair(roles a: LinkSetup.Roles = [.host, .join], unavailable: String = "", idleTeardown: UInt64 = 60_000,
                  groups: MemoryLinkConditions = MemoryLinkConditions()) async throws -> Setup {
        let net = MemoryNetwork()
        // Bluetooth-like: 400 kB/s, 5 ms each way.
        net.conditions = ["a-bt": MemoryLinkConditions(bandwidth: 400_000, delay: .milliseconds(5))]
        let ua = MemoryUpgrader(network: net, name: "a", roles: a, unavailable: unavailable)
        let ub = MemoryUpgrader(network: net, name: "b", groupConditions: groups)
        let nodeA = try Node(identity: Identity(), displayName: "alpha", transports: [MemoryTransport(network: net, address: "a-bt", emulating: .rfcomm)],
                             upgraders: [ua])
        let nodeB = try Node(identity: Identity(), displayName: "beta", transports: [MemoryTransport(network: net, address: "b-bt", emulating: .rfcomm)],
                             upgraders: [ub])
        var config = SessionConfig()
        config.upgrade.idleTeardown = idleTeardown
        let sa = Session(node: nodeA, config: config), sb = Session(node: nodeB, config: config)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-upgrade-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let timeline = Timeline()
        for (side, s) in [("a", sa), ("b", sb)] {
            Task {
                for await e in s.events {
                    timeline.add(side, e)
                    if case let .resourceOffered(o) = e { try? await s.accept(o, into: dir + "/inbox", keepingFree: 0) }
                }
            }
        }
        let adv = Advertiser(node: nodeA, service: try ServiceType("upgrade"), discovery: MemoryDiscovery())
        try await adv.start()
        Task { for await i in adv.invitations { i.accept(into: sa) } }
        let viaBT = PeerInfo(peerID: nodeA.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .rfcomm, host: "a-bt", port: 0)])
        try await nodeB.invite(viaBT, to: sb, timeout: .seconds(5))
        return Setup(net: net, a: nodeA, b: nodeB, sa: sa, sb: sb, ua: ua, ub: ub, timeline: timeline, dir: dir)
    }

    func file(_ dir: String, mib: Int) throws -> (String, Data) {
        let content = Data((0..<(mib << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ ($0 >> 16)) })
        let path = dir + "/f-\(mib).bin"
        try content.write(to: URL(fileURLWithPath: path))
        return (path, content)
    }

    func linkCount(_ s: Session) async -> Int { await s.links().first?.links.count ?? 0 }

    func testAFileStartsTheUpgradeAndBulkMovesToTheGroupLink() async throws {
        let p = try await makePair()
        defer { try? FileManager.default.removeItem(atPath: p.dir) }
        let (path, content) = try file(p.dir, mib: 2)
        try await within(60, "the file sent") { try await p.sb.sendResource(at: path, to: p.a.peerID) }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: p.dir + "/inbox/f-2.bin")), content)

        let steps = p.timeline.steps("b").map(\.step)
        XCTAssertEqual(steps.first, .proposed, "the sender proposed when the file started: \(steps)")
        XCTAssertTrue(steps.contains(.linkUp), "\(steps)")
        XCTAssertTrue(p.timeline.steps("a").map(\.step).contains(.receivedProposal))
        let group = p.timeline.linksUp("b", .memoryGroup)
        XCTAssertEqual(group.count, 1, "one group link joined the same session")
        XCTAssertTrue(p.timeline.bulkCarriers("b").contains(group[0]), "bulk moved to the group link")
        let peers = await p.sb.connectedPeers()
        XCTAssertEqual(peers, [p.a.peerID], "still one peer")
        let hostedByB = p.ub.hostedGroups
        XCTAssertEqual(hostedByB.count, 1, "the proposer hosts when both can do both")
        XCTAssertEqual(p.ua.preparedJoins.count, 1, "the joiner got ready while the host formed its group")
        XCTAssertEqual(p.ub.preparedJoins, [], "the host has no join to prepare")
        let proposal = try XCTUnwrap(p.timeline.steps("b").first)
        XCTAssertEqual(proposal.detail, "sending 'f-2.bin' (2.0 MiB)", "the timeline says why")
        // With the group carrying bulk, file bytes go in frame-sized pieces; messages keep
        // 16 KiB ones, since the Bluetooth link is still in the session.
        let sizes = await p.sb.fragmentSizes(for: p.a.peerID)
        let (bulk, messages) = (sizes?.bulk, sizes?.messages)
        XCTAssertEqual(bulk, SessionConfig().fastFragmentSize)
        XCTAssertEqual(messages, SessionConfig().fragmentSize)
    }

    /// Hashing a large file on a Raspberry Pi and forming a group take seconds each: the
    /// upgrade is proposed as the file starts, and the group forms while the file is hashed.
    func testTheUpgradeIsProposedWhileTheFileIsStillBeingHashed() async throws {
        let p = try await makePair()
        defer {
            FileDigest.Hooks.holdHashing = false
            try? FileManager.default.removeItem(atPath: p.dir)
        }
        let (path, content) = try file(p.dir, mib: 1)
        FileDigest.Hooks.holdHashing = true  // the hash does not end until the group is up
        let before = FileDigest.Hooks.hashes
        let send = Task { try await p.sb.sendResource(at: path, to: p.a.peerID) }
        let groupUp = await waitUntil(timeout: 10) { !p.timeline.linksUp("b", .memoryGroup).isEmpty }
        XCTAssertTrue(groupUp, "the group link came up: \(p.timeline.steps("b").map(\.step))")
        XCTAssertEqual(FileDigest.Hooks.hashes, before, "…while the file was still being hashed")
        FileDigest.Hooks.holdHashing = false
        try await within(60, "the file sent") { try await send.value }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: p.dir + "/inbox/f-1.bin")), content)
        XCTAssertEqual(FileDigest.Hooks.hashes, before + 1)
    }

    /// `peerlink send` exits right after `disconnect()`: the group it hosts must be gone by
    /// then, even when removing it takes a while (seen in the lab: a group left on the radio).
    func testDisconnectReturnsOnlyAfterTheGroupIsTakenDown() async throws {
        let p = try await makePair()
        defer { try? FileManager.default.removeItem(atPath: p.dir) }
        let (path, _) = try file(p.dir, mib: 2)
        try await within(60, "the file sent") { try await p.sb.sendResource(at: path, to: p.a.peerID) }
        XCTAssertEqual(p.ub.hostedGroups.count, 1, "the sender hosts the group")
        p.ub.delayLeaves(by: .milliseconds(500))
        await p.sb.disconnect()
        XCTAssertEqual(p.ub.hostedGroups, [], "taken down before disconnect() returned")
    }

    /// A session asks its node's upgraders to get ready when it is made (before any peer is
    /// found), stands them down once on `disconnect()`, and again when a peer joins after that.
    func testASessionStandsItsUpgradersByUntilItDisconnects() async throws {
        let p = try await makePair()
        defer { try? FileManager.default.removeItem(atPath: p.dir) }
        XCTAssertEqual(p.ua.sessionsStandingBy, 1)
        XCTAssertEqual(p.ub.sessionsStandingBy, 1)
        let other = Session(node: p.b)
        XCTAssertEqual(p.ub.sessionsStandingBy, 2, "each session stands by")
        await other.disconnect()
        await other.disconnect()
        XCTAssertEqual(p.ub.sessionsStandingBy, 1, "stood down once, by the time disconnect() returned")
        await p.sb.disconnect()
        XCTAssertEqual(p.ub.sessionsStandingBy, 0)
        // A session used again after disconnecting stands by again.
        let viaBT = PeerInfo(peerID: p.a.peerID, displayName: "alpha", info: [:], endpoints: [TransportEndpoint(medium: .rfcomm, host: "a-bt", port: 0)])
        try await p.b.invite(viaBT, to: p.sb, timeout: .seconds(5))
        XCTAssertEqual(p.ub.sessionsStandingBy, 1)
        await p.sb.disconnect()
        var dropped: Session? = Session(node: p.a)
        XCTAssertEqual(p.ua.sessionsStandingBy, 2)
        XCTAssertNotNil(dropped)
        dropped = nil
        let undone = await waitUntil(timeout: 5) { p.ua.sessionsStandingBy == 1 }
        XCTAssertTrue(undone, "a session dropped without disconnect() stands down too")
    }

    func testAPeerThatCannotTakePartRefusesAndTheSessionStaysOnBluetooth() async throws {
        let p = try await makePair(roles: [], unavailable: "wlan0's driver does not support P2P")
        defer { try? FileManager.default.removeItem(atPath: p.dir) }
        let (path, content) = try file(p.dir, mib: 1)
        try await within(60, "the file sent") { try await p.sb.sendResource(at: path, to: p.a.peerID) }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: p.dir + "/inbox/f-1.bin")), content)
        let rejected = p.timeline.steps("b").first { $0.step == .rejected }
        XCTAssertEqual(rejected?.detail, "this peer cannot use memory-group: wlan0's driver does not support P2P")
        let count = await linkCount(p.sb)
        XCTAssertEqual(count, 1, "nothing but the Bluetooth link")
        XCTAssertEqual(p.ub.hostedGroups, [], "nothing was set up")
        // Now the side that cannot sends: it proposes nothing, and its timeline says why.
        let (back, _) = try file(p.dir, mib: 1)
        try await within(60, "the file sent") { try await p.sa.sendResource(at: back, name: "back.bin", to: p.b.peerID) }
        let told = await waitUntil(timeout: 5) { p.timeline.steps("a").contains { $0.step == .unavailable } }
        XCTAssertTrue(told, "\(p.timeline.steps("a").map(\.step))")
        let why = p.timeline.steps("a").first { $0.step == .unavailable }?.detail ?? ""
        XCTAssertEqual(why, "not proposed for sending 'back.bin' (1.0 MiB): wlan0's driver does not support P2P")
        XCTAssertFalse(p.timeline.steps("b").contains { $0.step == .receivedProposal }, "nothing reached the peer")
    }

    /// A host hands its group out before it can be reached (a Wi-Fi host's address still in
    /// DAD): the joiner's first dials fail with "host unreachable", it dials again, and bulk
    /// still moves to the group.
    func testAJoinerDialsAgainWhileTheHostIsNotYetReachable() async throws {
        let p = try await makePair()
        defer { try? FileManager.default.removeItem(atPath: p.dir) }
        p.ub.handOutBeforeReachable(by: .milliseconds(700))
        let (path, content) = try file(p.dir, mib: 2)
        try await within(60, "the file sent") { try await p.sb.sendResource(at: path, to: p.a.peerID) }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: p.dir + "/inbox/f-2.bin")), content)
        let up = await waitUntil(timeout: 10) { p.timeline.steps("a").contains { $0.step == .linkUp } }
        let steps = p.timeline.steps("a")
        XCTAssertTrue(up, "the joiner's link came up after its dial was refused: \(steps.map { "\($0.step) \($0.detail)" })")
        XCTAssertFalse(steps.contains { $0.step == .failed }, "\(steps.map { "\($0.step) \($0.detail)" })")
    }

    func testAFailedSetUpLeavesTheBluetoothSessionUntouched() async throws {
        let p = try await makePair()
        defer { try? FileManager.default.removeItem(atPath: p.dir) }
        p.ub.failNextStep("the radio is busy scanning")
        let (path, content) = try file(p.dir, mib: 1)
        try await within(60, "the file sent") { try await p.sb.sendResource(at: path, to: p.a.peerID) }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: p.dir + "/inbox/f-1.bin")), content)
        let failed = p.timeline.steps("b").first { $0.step == .failed }
        XCTAssertTrue(failed?.detail.contains("the radio is busy scanning") == true, "\(String(describing: failed))")
        let ok = await waitUntil(timeout: 5) { p.timeline.steps("a").contains { $0.step == .failed } }
        XCTAssertTrue(ok, "the peer hears of the failure too")
        // The joiner prepared for a join that never came, and was told to leave it.
        let prepared = p.ua.preparedJoins
        XCTAssertEqual(prepared.count, 1)
        let undone = await waitUntil(timeout: 5) { p.ua.leftGroups == prepared }
        XCTAssertTrue(undone, "prepared \(prepared), left \(p.ua.leftGroups)")
        let count = await linkCount(p.sa)
        XCTAssertEqual(count, 1)
        // The session still works.
        try await p.sb.send(Array("still here".utf8), to: [p.a.peerID])
    }

    func testATransferSurvivesTheGroupBeingTornDownMidway() async throws {
        // The group link (b hosts it) is quick but not instant from its first byte: 3 MiB
        // take about 3 s on it, so the teardown lands mid-transfer.
        let p = try await makePair(groups: MemoryLinkConditions(bandwidth: 1_000_000))
        defer { try? FileManager.default.removeItem(atPath: p.dir) }
        let (path, content) = try file(p.dir, mib: 3)
        let send = Task { try await p.sb.sendResource(at: path, to: p.a.peerID) }
        let groupUp = await waitUntil(timeout: 10) { !p.timeline.linksUp("b", .memoryGroup).isEmpty }
        XCTAssertTrue(groupUp, "the group link came up")
        try await Task.sleep(nanoseconds: 300_000_000)
        let unfinished = !FileManager.default.fileExists(atPath: p.dir + "/inbox/f-3.bin")
        XCTAssertTrue(unfinished, "the file is still on its way when the group goes")
        for g in p.ub.hostedGroups { p.ub.tearDownFromOutside(g) }
        try await within(60, "the file sent") { try await send.value }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: p.dir + "/inbox/f-3.bin")), content, "nothing lost, nothing doubled")
        XCTAssertTrue(p.timeline.steps("b").contains { $0.step == .tornDown }, "\(p.timeline.steps("b").map(\.step))")
        let count = await linkCount(p.sb)
        XCTAssertEqual(count, 1, "back on Bluetooth alone")
    }

    func testAnIdleGroupIsTornDownAndTheNextFileFormsItAgain() async throws {
        let p = try await makePair(idleTeardown: 600)
        defer { try? FileManager.default.removeItem(atPath: p.dir) }
        let (path, _) = try file(p.dir, mib: 1)
        try await within(60, "the file sent") { try await p.sb.sendResource(at: path, to: p.a.peerID) }
        let down = await waitUntil(timeout: 5) { p.timeline.steps("b").contains { $0.step == .tornDown } }
        XCTAssertTrue(down, "torn down after 0.6 s without bulk")
        // Whichever side's timer fires first takes it down; the other may see the link go first.
        let why = (p.timeline.steps("a") + p.timeline.steps("b")).filter { $0.step == .tornDown }.map(\.detail)
        XCTAssertTrue(why.contains { $0.contains("no bulk traffic for 0.6 s") }, "\(why)")
        let cleared = await waitUntil(timeout: 5) { p.ub.hostedGroups.isEmpty }
        XCTAssertTrue(cleared, "the host left its group")
        try await within(60, "the file sent") { try await p.sb.sendResource(at: path, to: p.a.peerID) }
        XCTAssertEqual(p.timeline.linksUp("b", .memoryGroup).count, 2, "formed again for the next file")
    }
}
