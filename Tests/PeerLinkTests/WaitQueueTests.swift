import Foundation
import TestKit
import XCTest
@testable import PeerLink

/// `WaitQueue` (a stream's incoming bytes; a session's events before they could be read by
/// several loops): order, one delivery per element, readers served in the order they waited,
/// and a cancelled reader that ends with nil without taking an element.
private typealias EventQueue = WaitQueue<Session.Event, Never>

final class WaitQueueTests: XCTestCase {
    private static let peer = PeerID(publicKey: [UInt8](repeating: 7, count: 32))

    private static func message(_ i: Int) -> Session.Event { .message(from: peer, bytes: [UInt8(i & 0xff), UInt8(i >> 8)], mode: .reliable) }


    func testEventsComeOutInOrderWhetherBufferedOrAwaited() async throws {
        let q = EventQueue()
        for i in 0..<3000 { q.push(Self.message(i)) }
        XCTAssertEqual(q.count, 3000)
        let reader = Task { () -> [Int] in
            var got: [Int] = []
            for _ in 0..<6000 {
                let e = await q.next()
                if let n = eventNumber(e) { got.append(n) }
            }
            return got
        }
        for i in 3000..<6000 {
            q.push(Self.message(i))
            if i % 500 == 0 { await Task.yield() }
        }
        let got = try await within(30, "the reader's 6000 events") { await reader.value }
        XCTAssertEqual(got, Array(0..<6000))
        XCTAssertEqual(q.count, 0)
    }

    func testWaitingReadersAreServedInTheOrderTheyWaited() async throws {
        let q = EventQueue()
        var readers: [Task<Int?, Never>] = []
        for _ in 0..<3 {
            readers.append(Task { () -> Int? in
                let e = await q.next()
                return eventNumber(e)
            })
            try await Task.sleep(nanoseconds: 50_000_000)  // let it start waiting before the next one
        }
        for i in 0..<3 { q.push(Self.message(i)) }
        var got: [Int?] = []
        for (i, r) in readers.enumerated() { got.append(try await within(10, "reader \(i)'s event") { await r.value }) }
        XCTAssertEqual(got, [0, 1, 2])
    }

    func testACancelledReaderEndsWithNilAndTakesNothing() async throws {
        let q = EventQueue()
        let cancelled = Task { await q.next() }
        try await Task.sleep(nanoseconds: 50_000_000)
        cancelled.cancel()
        let first = try await within(10, "the cancelled reader to return") { await cancelled.value }
        XCTAssertNil(first, "cancelled while waiting")
        let early = Task { () -> Session.Event? in
            withUnsafeCurrentTask { $0?.cancel() }
            return await q.next()
        }
        let second = try await within(10, "the reader cancelled before waiting to return") { await early.value }
        XCTAssertNil(second, "cancelled before waiting")
        q.push(Self.message(42))
        XCTAssertEqual(q.count, 1, "nobody took it")
        let next = try await within(10, "the event nobody took") { await q.next() }
        XCTAssertEqual(eventNumber(next), 42)
    }
}

/// The number a test message carries.
private func eventNumber(_ e: Session.Event?) -> Int? {
    guard case let .message(_, b, _)? = e, b.count == 2 else { return nil }
    return Int(b[0]) | Int(b[1]) << 8
}

/// The same queue for a stream's bytes: what was pushed is read before the end, and the end
/// says how the stream ended.
final class StreamBufferTests: XCTestCase {
    func testAFinishedBufferDrainsThenEndsOrThrows() async throws {
        let clean = StreamBuffer()
        clean.push([1]); clean.push([2])
        clean.finish()
        clean.push([3])  // after the end: ignored
        var got: [[UInt8]] = []
        while let chunk = try await clean.next() { got.append(chunk) }
        XCTAssertEqual(got, [[1], [2]])

        let failed = StreamBuffer()
        let waiting = Task { () -> String in
            do { _ = try await failed.next(); return "no error" } catch { return "\(error)" }
        }
        try await Task.sleep(nanoseconds: 50_000_000)
        failed.finish(.resourceFailed(.cancelledBySender(name: nil)))
        let why = try await within(10, "the waiting reader to learn the end") { await waiting.value }
        XCTAssertEqual(why, "transfer failed: stream cancelled by the sender")
    }
}

