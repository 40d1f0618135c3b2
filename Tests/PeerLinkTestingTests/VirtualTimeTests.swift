import Foundation
import PeerLink
import PeerLinkTesting
import XCTest

/// `VirtualTime` through the public API only (this target has no package access): what an
/// app's own tests can count on.
final class VirtualTimeTests: XCTestCase {
    func testAnHourOfSleepsEndsInVirtualOrderWithoutWaitingForTheClock() throws {
        let started = Date()
        let (order, end) = try VirtualTime.run(seed: 1) { () -> ([String], Duration) in
            let log = Log()
            await withTaskGroup(of: Void.self) { group in
                for (name, minutes) in [("sixty", 60), ("one", 1), ("thirty", 30)] {
                    group.addTask {
                        try? await VirtualTime.sleep(for: .seconds(minutes * 60))
                        await log.add("\(name)@\(VirtualTime.now / .seconds(60))")
                    }
                }
            }
            return (await log.lines, VirtualTime.now)
        }
        XCTAssertEqual(order, ["one@1.0", "thirty@30.0", "sixty@60.0"])
        XCTAssertEqual(end, .seconds(3600))
        XCTAssertLessThan(Date().timeIntervalSince(started), 60, "an hour of sleeps waited for the real clock")
        XCTAssertFalse(VirtualTime.isRunning, "still running after run returned")
    }

    func testTheSameSeedGivesTheSameNumbers() throws {
        func numbers(_ seed: UInt64) throws -> [UInt64] {
            try VirtualTime.run(seed: seed) { (0..<8).map { _ in VirtualTime.random() } }
        }
        XCTAssertEqual(try numbers(7), try numbers(7))
        XCTAssertNotEqual(try numbers(7), try numbers(8), "the seed did not change the numbers")
        let bytes = try VirtualTime.run(seed: 7) { VirtualTime.randomBytes(13) }
        XCTAssertEqual(bytes.count, 13)
    }

    func testARunThatPassesItsLimitFails() {
        XCTAssertThrowsError(try VirtualTime.run(seed: 1, limit: .seconds(10)) {
            try await VirtualTime.sleep(for: .seconds(60))
        }) { error in
            XCTAssertEqual(error as? VirtualTime.Failure, .overran(limit: .seconds(10)))
            XCTAssertTrue("\(error)".contains("limit of 10.0 s"), "\(error)")
        }
    }

    func testABodyThatThrowsThrowsItsOwnError() {
        struct Mine: Error, Equatable {}
        XCTAssertThrowsError(try VirtualTime.run(seed: 1) { () async throws -> Int in throw Mine() }) { error in
            XCTAssertEqual(error as? Mine, Mine())
        }
    }

    /// Two real nodes on an in-memory link with a 300 ms one-way delay: invitation, Noise
    /// handshake and a message, all in virtual time.
    func testTwoNodesOnADelayedMemoryLinkExchangeAMessageInVirtualTime() throws {
        let (text, at) = try VirtualTime.run(seed: 3, limit: .seconds(120)) { () -> (String, Duration) in
            let net = MemoryNetwork()
            net.setConditions(MemoryLinkConditions(delay: .milliseconds(300)), for: "a")
            let a = try Node(identity: Identity(), displayName: "a", transports: [MemoryTransport(network: net, address: "a", emulating: .tcp)])
            let b = try Node(identity: Identity(), displayName: "b", transports: [MemoryTransport(network: net, address: "b", emulating: .tcp)])
            let sa = Session(node: a), sb = Session(node: b)
            let advertiser = Advertiser(node: a, service: try ServiceType("virtual"))
            try await advertiser.start()
            let accepting = Task { for await invitation in advertiser.invitations { invitation.accept(into: sa) } }
            let received = Task { () -> (String, Duration)? in
                for await event in sa.events {
                    if case let .message(_, bytes, _) = event { return (String(decoding: bytes, as: UTF8.self), VirtualTime.now) }
                }
                return nil
            }
            let sentAt = VirtualTime.now
            try await b.invite(PeerInfo(peerID: a.peerID, displayName: "a", info: [:],
                                        endpoints: [TransportEndpoint(medium: .tcp, host: "a", port: 0)]), to: sb, timeout: .seconds(30))
            try await sb.send(Array("over a slow link".utf8), to: [a.peerID])
            let got = await received.value
            accepting.cancel()
            await sb.disconnect(); await sa.disconnect(); await advertiser.stop()
            guard let got else { throw Unexpected.noMessage }
            return (got.0, got.1 - sentAt)
        }
        XCTAssertEqual(text, "over a slow link")
        // The dial, the handshake's messages and the message itself each cross the delay.
        XCTAssertGreaterThanOrEqual(at, .milliseconds(600), "the link's delay did not apply in virtual time")
        XCTAssertLessThan(at, .seconds(30))
    }

    private enum Unexpected: Error { case noMessage }

    private actor Log {
        var lines: [String] = []
        func add(_ line: String) { lines.append(line) }
    }
}
