import Foundation
import PeerLinkCore
import TestKit
import XCTest
@testable import PeerLink

/// What a caller switches on when something fails: why a dial failed, why a resource failed,
/// which file could not be used and why; and the text a user reads, unchanged.
final class FailureReasonTests: XCTestCase {
    /// A TCP port on loopback that nobody listens on.
    private func closedPort() throws -> UInt16 {
        let listener = try TCPTransport(bindHost: "127.0.0.1").listen(port: 0) { $0.close() }
        let port = listener.port
        listener.close()
        return port
    }

    func testDiallingATCPPortNobodyListensOnIsRefused() async throws {
        let b = try Node(identity: Identity(), displayName: "beta", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let ghost = Identity().peerID
        let endpoint = TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: try closedPort())
        do {
            try await b.invite(PeerInfo(peerID: ghost, displayName: "ghost", info: [:], endpoints: [endpoint]),
                               to: Session(node: b), timeout: .seconds(5))
            XCTFail("nobody listens")
        } catch let PeerLinkError.unreachable(peer, failures) {
            XCTAssertEqual(peer, ghost)
            XCTAssertEqual(failures.map(\.endpoint), [endpoint])
            XCTAssertEqual(failures.map(\.reason), [.refused])
            guard case let .transport(.system(_, errno))? = failures.first?.cause else { return XCTFail("\(failures)") }
            XCTAssertEqual(errno, ECONNREFUSED)
            XCTAssertEqual(PeerLinkError.unreachable(peer, failures: failures).description,
                           "could not reach peer \(ghost.short): \(endpoint): connect to \(endpoint) failed: Connection refused (errno \(ECONNREFUSED))")
        }
    }

    func testAPeerWithNoEndpointThisNodeCanUseSaysSo() async throws {
        let b = try Node(identity: Identity(), displayName: "beta", transports: [TCPTransport(bindHost: "127.0.0.1")])
        let ghost = Identity().peerID
        let info = PeerInfo(peerID: ghost, displayName: "ghost", info: [:],
                            endpoints: [TransportEndpoint(medium: .memory, host: "elsewhere", port: 0)])
        do {
            try await b.invite(info, to: Session(node: b), timeout: .seconds(5))
            XCTFail("no usable endpoint")
        } catch let e as PeerLinkError {
            XCTAssertEqual(e, .unreachable(ghost, failures: [DialFailure(endpoint: nil, reason: .noUsableEndpoint)]))
            XCTAssertEqual(e.description, "could not reach peer \(ghost.short): no endpoint on a medium this node has (or the policy allows)")
        }
    }

    func testTransportAndLinkErrorsAreClassified() throws {
        let ep = TransportEndpoint(medium: .tcp, host: "192.0.2.1", port: 7)
        let other = Identity().peerID
        let cases: [(any Error, DialFailure.Reason)] = [
            (TransportError.system(operation: "connect", errno: ECONNREFUSED), .refused),
            (TransportError.system(operation: "connect", errno: EHOSTUNREACH), .noRoute),
            (TransportError.system(operation: "connect", errno: ENETUNREACH), .noRoute),
            (TransportError.system(operation: "connect", errno: EACCES), .transport),
            (TransportError.pathGone("wlan0 went down"), .noRoute),
            (TransportError.timedOut(operation: "connect", after: .seconds(10)), .timedOut),
            (LinkError.timedOut("secure handshake with x"), .timedOut),
            (LinkError.handshakeFailed("bad prologue"), .handshakeFailed),
            (LinkError.unexpectedPeer(expected: Identity().peerID, actual: other), .wrongPeer(other)),
            (LinkError.unexpectedPeerPrefix(expected: [1, 2], actual: other), .wrongPrefix(other)),
            (LinkError.closedByRemote, .closedByRemote),
            (PeerLinkError.invitationDeclined(other), .declined),
            (CancellationError(), .other),
        ]
        for (error, reason) in cases {
            let failure = DialFailure(endpoint: ep, error: error)
            XCTAssertEqual(failure.reason, reason, "\(error)")
            // The text is the endpoint and the error's own words, as before.
            XCTAssertEqual(failure.description, "\(ep): \(error)")
        }
        // A failure raised as such keeps its reason and gains the endpoint.
        let given = DialFailure(endpoint: ep, error: DialFailure(endpoint: nil, reason: .noTransport(.memory)))
        XCTAssertEqual(given, DialFailure(endpoint: ep, reason: .noTransport(.memory)))
        XCTAssertEqual(given.description, "\(ep): this node has no memory transport")
    }

    func testAResourceWhoseDigestDoesNotMatchFailsOnBothSides() async throws {
        let net = MemoryNetwork()
        let p = try await connectedPair(transportA: MemoryTransport(network: net, address: "node-a"),
                                        transportB: MemoryTransport(network: net, address: "node-b"),
                                        discovery: MemoryDiscovery(addressOf: { _ in "node-a" }))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-reasons-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let src = dir + "/notes.txt"
        try Data(repeating: 7, count: 40_000).write(to: URL(fileURLWithPath: src))
        // The sender believes the file has another SHA-256 (as after a change its size and
        // time did not show): the receiver's check must catch it.
        FileDigest.cache.remember([UInt8](repeating: 0xAB, count: 32), for: try FileIdentity(path: src))
        let received = Task { () -> ResourceFailure? in
            for await e in p.sa.events {
                switch e {
                case let .resourceOffered(o): try? await p.sa.accept(o, into: dir + "/inbox")
                case let .resourceFinished(_, _, error): return error
                default: break
                }
            }
            return nil
        }
        do {
            try await within(30, "the send") { try await p.sb.sendResource(at: src, to: p.a.peerID) }
            XCTFail("a file whose digest does not match must not be accepted")
        } catch let PeerLinkError.resourceFailed(failure) {
            XCTAssertEqual(failure, .digestMismatch(name: "notes.txt", direction: .sending))
            XCTAssertEqual("\(PeerLinkError.resourceFailed(failure))", "transfer failed: the receiver's SHA-256 check of 'notes.txt' failed")
        }
        let error = try await within(10, "the receiver's outcome") { await received.value }
        XCTAssertEqual(error, .digestMismatch(name: "notes.txt", direction: .receiving))
        XCTAssertEqual(error?.description, "SHA-256 mismatch: the received bytes of 'notes.txt' differ from the sender's file; discarded")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/inbox/notes.txt"), "nothing kept under the final name")
    }

    func testAReservedStreamNameIsRefused() async throws {
        let net = MemoryNetwork()
        let p = try await connectedPair(transportA: MemoryTransport(network: net, address: "node-a"),
                                        transportB: MemoryTransport(network: net, address: "node-b"),
                                        discovery: MemoryDiscovery(addressOf: { _ in "node-a" }))
        do {
            _ = try await p.sb.openStream(name: "peerlink/mine", to: p.a.peerID)
            XCTFail("a reserved name must be refused")
        } catch let PeerLinkError.resourceFailed(failure) {
            XCTAssertEqual(failure, .reservedStreamName(prefix: "peerlink/"))
            XCTAssertEqual(failure.description, "stream names starting with 'peerlink/' are PeerLink's own; choose another")
        }
    }

    func testAKeyOtherUsersCanReadIsRefusedWithItsMode() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-key-\(UUID())").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let store = IdentityStore(directory: dir)
        _ = try store.loadOrCreate()
        XCTAssertEqual(chmod(store.keyPath, 0o644), 0)
        do {
            _ = try store.loadOrCreate()
            XCTFail("a key others can read must be refused")
        } catch let PeerLinkError.file(failure) {
            XCTAssertEqual(failure, FileFailure(path: store.keyPath, .readableByOthers(mode: 0o644)))
            XCTAssertEqual(failure.description, "\(store.keyPath) is readable by other users (mode 644); run: chmod 600 \(store.keyPath)")
        }
    }

    func testALinkSaysWhyItCameUpAndWhyItWentAway() async throws {
        let net = MemoryNetwork()
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [MemoryTransport(network: net, address: "a")])
        let b = try Node(identity: Identity(), displayName: "beta", transports: [MemoryTransport(network: net, address: "b")])
        let sa = Session(node: a), sb = Session(node: b)
        let adv = Advertiser(node: a, service: try ServiceType("reasons"), discoveries: [])
        try await adv.start()
        Task { for await inv in adv.invitations { inv.accept(into: sa) } }
        let changes = Task { () -> [(up: Bool, reason: LinkChangeReason)] in
            var seen: [(up: Bool, reason: LinkChangeReason)] = []
            for await e in sb.events {
                if case let .linkChanged(_, _, _, up, reason) = e { seen.append((up, reason)); if !up { break } }
            }
            return seen
        }
        let endpoint = TransportEndpoint(medium: .memory, host: "a", port: 0)
        try await b.invite(PeerInfo(peerID: a.peerID, displayName: "alpha", info: [:], endpoints: [endpoint]), to: sb, timeout: .seconds(5))
        net.drop("a")  // alpha's radio switched off: its connections close
        let seen = try await within(10, "beta seeing its link come up and go away") { await changes.value }
        XCTAssertEqual(seen.map(\.up), [true, false])
        guard case let .authenticated(remote)? = seen.first?.reason else { return XCTFail("\(seen)") }
        XCTAssertEqual(seen.first?.reason.description, "authenticated link to \(remote)")
        XCTAssertEqual(seen.last?.reason, .closedByRemote)
        XCTAssertEqual(seen.last?.reason.description, "closed by the remote")
    }

    func testAReceiverWhosePeerGoesAwaySaysSoAndKeepsThePartialFile() async throws {
        let net = MemoryNetwork()
        net.conditions = ["a": MemoryLinkConditions(bandwidth: 200_000)]  // 2 MB take ~10 s
        let p = try await connectedPair(transportA: MemoryTransport(network: net, address: "a"),
                                        transportB: MemoryTransport(network: net, address: "b"),
                                        discovery: MemoryDiscovery(addressOf: { _ in "a" }))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-gone-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        try Data(repeating: 0x5a, count: 2_000_000).write(to: URL(fileURLWithPath: dir + "/big.bin"))
        let received = Task { () -> ResourceFailure? in
            for await e in p.sa.events {
                switch e {
                case let .resourceOffered(o): try? await p.sa.accept(o, into: dir + "/in")
                case let .resourceProgress(prog) where prog.completed > 0 && prog.direction == .receiving: net.drop("a")
                case let .resourceFinished(_, _, error): return error
                default: break
                }
            }
            return nil
        }
        let sending = Task { try await p.sb.sendResource(at: dir + "/big.bin", to: p.a.peerID) }
        let error = try await within(20, "the receiver's outcome") { await received.value }
        sending.cancel()
        XCTAssertEqual(error, .disconnected(reason: "closed by the remote"))
        XCTAssertEqual(error?.description, "peer disconnected (closed by the remote); the partial file is kept to resume")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/in/.peerlink-partial").count, 1)
    }
}
