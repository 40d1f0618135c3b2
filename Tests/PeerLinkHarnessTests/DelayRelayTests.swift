import Foundation
import XCTest
import PeerLink
@testable import PeerLinkHarness

/// The IP lab's delay: the queue's rules, and a real relay on loopback.
final class DelayRelayTests: XCTestCase {
    func testQueueReleasesInOrderOnlyWhenDue() {
        var q = DelayQueue(delay: 15, limit: 10)
        q.push([1, 2], at: 100)
        q.push([3], at: 105)
        XCTAssertEqual(q.nextDue, 115)
        XCTAssertEqual(q.pop(at: 114), [], "nothing leaves before its delay")
        XCTAssertEqual(q.pop(at: 115), [1, 2])
        XCTAssertEqual(q.nextDue, 120)
        XCTAssertEqual(q.pop(at: 500), [3])
        XCTAssertTrue(q.isEmpty)
        XCTAssertNil(q.nextDue)
    }

    func testQueueStopsReadingWhenFull() {
        var q = DelayQueue(delay: 1, limit: 4)
        XCTAssertTrue(q.hasRoom)
        q.push([1, 2, 3], at: 0)
        XCTAssertTrue(q.hasRoom)
        q.push([4, 5], at: 0)
        XCTAssertFalse(q.hasRoom, "a full queue stops the reader, so TCP's flow control reaches the sender")
        _ = q.pop(at: 1)
        XCTAssertTrue(q.hasRoom)
        XCTAssertEqual(q.queued, 0)
    }

    func testQueueKeepsOrderOverManyChunks() {
        var q = DelayQueue(delay: 0)
        var out: [UInt8] = []
        for i in 0..<1000 {
            q.push([UInt8(i % 256)], at: i)
            if i % 7 == 0 { out += q.pop(at: i) }
        }
        out += q.pop(at: 10_000)
        XCTAssertEqual(out, (0..<1000).map { UInt8($0 % 256) })
    }

    /// Through a real relay on loopback: bytes arrive intact and in order both ways, and a
    /// round trip takes at least twice the delay (a lower bound: a slow machine only adds).
    func testRelayDelaysBothWaysAndKeepsBytes() async throws {
        let echo = try TCPTransport(bindHost: "127.0.0.1").listen(port: 0) { conn in
            Task {
                while let m = try? await conn.receive() {
                    conn.enqueue(m)
                    await conn.flush()
                }
                conn.close()
            }
        }
        defer { echo.close() }
        let relay = try DelayRelay(host: "127.0.0.1", listenPort: 0, targetPort: echo.port, delayMilliseconds: 40)
        defer { relay.close() }
        let conn = try await TCPTransport(bindHost: "127.0.0.1")
            .connect(to: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: relay.port), timeout: 5)
        defer { conn.close() }

        let big = (0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        for message in [Array("ping".utf8), big, [0]] {
            let start = DispatchTime.now().uptimeNanoseconds
            conn.enqueue(message)
            await conn.flush()
            let back = try await conn.receive()
            let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
            XCTAssertEqual(back, message, "the relay keeps every byte, in order")
            XCTAssertGreaterThanOrEqual(ms, 80, "a round trip through a 40 ms relay takes at least 80 ms")
        }
    }

    /// The far side going away is passed on: the dialler's connection ends.
    func testRelayPassesOnTheEnd() async throws {
        let accepted = AsyncStream<MessageConnection>.makeStream()
        let server = try TCPTransport(bindHost: "127.0.0.1").listen(port: 0) { accepted.continuation.yield($0) }
        defer { server.close() }
        let relay = try DelayRelay(host: "127.0.0.1", listenPort: 0, targetPort: server.port, delayMilliseconds: 5)
        defer { relay.close() }
        let conn = try await TCPTransport(bindHost: "127.0.0.1")
            .connect(to: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: relay.port), timeout: 5)
        defer { conn.close() }
        var it = accepted.stream.makeAsyncIterator()
        let next = await it.next()
        let far = try XCTUnwrap(next)
        far.enqueue(Array("bye".utf8))
        await far.flush()
        far.close()
        let bye = try await conn.receive()
        XCTAssertEqual(bye, Array("bye".utf8))
        let end = try? await conn.receive()
        XCTAssertEqual(end ?? nil, nil, "the relay closed the dialler's side after the far side left")
    }

    func testRelayRefusesABadAddress() {
        XCTAssertThrowsError(try DelayRelay(host: "not-an-ip", listenPort: 0, targetPort: 1, delayMilliseconds: 1)) { e in
            XCTAssertTrue("\(e)".contains("not an IPv4 address"), "\(e)")
        }
    }
}
