import Foundation
import XCTest
import PeerLink
import TestKit
@testable import PeerLinkHarness

/// The IP lab's delay: the queue's rules, and a real relay on loopback.
final class DelayRelayTests: XCTestCase {
    // The queue counts microseconds; `ms` keeps these cases readable.
    private func ms(_ v: Int) -> Int { v * 1000 }

    func testQueueReleasesInOrderOnlyWhenDue() {
        var q = DelayQueue(delay: ms(15), limit: 10)
        q.push([1, 2], at: ms(100))
        q.push([3], at: ms(105))
        XCTAssertEqual(q.nextDue, ms(115))
        XCTAssertEqual(q.pop(at: ms(115) - 1), [], "nothing leaves before its delay, not even a microsecond")
        XCTAssertEqual(q.pop(at: ms(115)), [1, 2])
        XCTAssertEqual(q.nextDue, ms(120))
        XCTAssertEqual(q.pop(at: ms(500)), [3])
        XCTAssertTrue(q.isEmpty)
        XCTAssertNil(q.nextDue)
    }

    func testQueueStopsReadingWhenFull() {
        var q = DelayQueue(delay: ms(1), limit: 4)
        XCTAssertTrue(q.hasRoom)
        q.push([1, 2, 3], at: 0)
        XCTAssertTrue(q.hasRoom)
        q.push([4, 5], at: 0)
        XCTAssertFalse(q.hasRoom, "a full queue stops the reader, so TCP's flow control reaches the sender")
        _ = q.pop(at: ms(1))
        XCTAssertTrue(q.hasRoom)
        XCTAssertEqual(q.queued, 0)
    }

    func testQueueKeepsOrderOverManyChunks() {
        var q = DelayQueue(delay: 0)
        var out: [UInt8] = []
        for i in 0..<1000 {
            q.push([UInt8(i % 256)], at: ms(i))
            if i % 7 == 0 { out += q.pop(at: ms(i)) }
        }
        out += q.pop(at: ms(10_000))
        XCTAssertEqual(out, (0..<1000).map { UInt8($0 % 256) })
    }

    func testQueueSerialisesAtItsRate() {
        // 10 kB/s: 1000 bytes take 100 ms on the wire, then 5 ms of delay.
        var q = DelayQueue(delay: ms(5), bytesPerSecond: 10_000)
        q.push([UInt8](repeating: 1, count: 1000), at: 0)
        q.push([UInt8](repeating: 2, count: 1000), at: 0)      // waits for the first
        q.push([UInt8](repeating: 3, count: 500), at: ms(1000))  // the link was idle by then
        XCTAssertEqual(q.nextDue, ms(105))
        XCTAssertEqual(q.pop(at: ms(105) - 1).count, 0)
        XCTAssertEqual(q.pop(at: ms(105)).count, 1000)
        XCTAssertEqual(q.nextDue, ms(205))
        XCTAssertEqual(q.pop(at: ms(999)).count, 1000)
        XCTAssertEqual(q.nextDue, ms(1055))
        XCTAssertEqual(q.limit, 16 << 10, "a quarter second at 10 kB/s is below the 16 KiB floor")
        XCTAssertEqual(DelayQueue(delay: 0, bytesPerSecond: 1_000_000).limit, 250_000, "a quarter second of buffer")
        XCTAssertEqual(DelayQueue(delay: 0, bytesPerSecond: 1_000_000).readSize, 10_000, "about 10 ms per read")
    }

    /// A rate-limited relay on loopback: 200 kB at 400 kB/s take half a second: not less
    /// (allowing 20 ms for the clocks), and not more than 700 ms (a relay at 70 % of the rate, or
    /// one that holds the bytes back, fails).
    func testRelayHoldsItsRate() async throws {
        let sink = AsyncStream<Int>.makeStream()
        let server = try TCPTransport(bindHost: "127.0.0.1").listen(port: 0) { conn in
            Task {
                var total = 0
                while let m = try? await conn.receive() {
                    total += m.count
                    if total >= 200_000 { sink.continuation.yield(total) }
                }
            }
        }
        defer { server.close() }
        let relay = try DelayRelay(host: "127.0.0.1", listenPort: 0, targetPort: server.port, delayMilliseconds: 0, bytesPerSecond: 400_000)
        defer { relay.close() }
        let conn = try await TCPTransport(bindHost: "127.0.0.1")
            .connect(to: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: relay.port), timeout: .seconds(5))
        defer { conn.close() }
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<5 { conn.enqueue([UInt8](repeating: 7, count: 40_000)) }
        await conn.flush()
        let got = try await within(10, "200 kB through the relay") { () -> Int? in
            var it = sink.stream.makeAsyncIterator()
            return await it.next()
        }
        let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        print("200 kB through a 400 kB/s relay: \(Int(ms)) ms")
        XCTAssertGreaterThanOrEqual(got ?? 0, 200_000)
        XCTAssertGreaterThanOrEqual(ms, 480, "200 kB through a 400 kB/s relay")
        XCTAssertLessThanOrEqual(ms, 700, "200 kB through a 400 kB/s relay: a relay at 70 % of the rate fails")
    }

    /// Through a real relay on loopback: bytes arrive intact and in order both ways, every
    /// round trip takes at least twice the delay, and the quickest of them not much more (a
    /// slow machine adds to some round trips, hardly to all of them).
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
            .connect(to: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: relay.port), timeout: .seconds(5))
        defer { conn.close() }

        let big = (0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var times: [Double] = []
        for message in [Array("ping".utf8), big, [0], [1], [2], [3], [4]] {
            let start = DispatchTime.now().uptimeNanoseconds
            conn.enqueue(message)
            await conn.flush()
            let back = try await within(10, "the echo of \(message.count) bytes") { try await conn.receive() }
            let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
            times.append(ms)
            XCTAssertEqual(back, message, "the relay keeps every byte, in order")
            XCTAssertGreaterThanOrEqual(ms, 80, "a round trip through a 40 ms relay takes at least 80 ms")
        }
        print("round trips through a 40 ms relay: \(times.map { Int($0) }) ms")
        XCTAssertLessThanOrEqual(times.min() ?? 0, 100, "the quickest round trip through a 40 ms relay: 80 ms and little more (a relay adding a quarter to the delay fails)")
    }

    /// The far side going away is passed on: the dialler's connection ends.
    func testRelayPassesOnTheEnd() async throws {
        let accepted = AsyncStream<MessageConnection>.makeStream()
        let server = try TCPTransport(bindHost: "127.0.0.1").listen(port: 0) { accepted.continuation.yield($0) }
        defer { server.close() }
        let relay = try DelayRelay(host: "127.0.0.1", listenPort: 0, targetPort: server.port, delayMilliseconds: 5)
        defer { relay.close() }
        let conn = try await TCPTransport(bindHost: "127.0.0.1")
            .connect(to: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: relay.port), timeout: .seconds(5))
        defer { conn.close() }
        let next = try await within(10, "the relay's connection to the server") { () -> MessageConnection? in
            var it = accepted.stream.makeAsyncIterator()
            return await it.next()
        }
        let far = try XCTUnwrap(next)
        far.enqueue(Array("bye".utf8))
        await far.flush()
        far.close()
        let bye = try await within(10, "the far side's last message") { try await conn.receive() }
        XCTAssertEqual(bye, Array("bye".utf8))
        let end = try await within(10, "the end passed on") { try? await conn.receive() }
        XCTAssertEqual(end ?? nil, nil, "the relay closed the dialler's side after the far side left")
    }

    func testRelayRefusesABadAddress() {
        XCTAssertThrowsError(try DelayRelay(host: "not-an-ip", listenPort: 0, targetPort: 1, delayMilliseconds: 1)) { e in
            XCTAssertTrue("\(e)".contains("not an IPv4 address"), "\(e)")
        }
    }
}
