import Foundation
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth
#if canImport(Glibc)
import Glibc
#endif

/// The socket edge's write path: messages queued faster than the socket drains leave in
/// batches, and a batch must keep every message, its order and (on message sockets) its
/// boundaries.
final class FDConnectionTests: XCTestCase {
    func pair(_ type: Int32) throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw XCTSkip("socketpair: errno \(errno)") }
        return (fds[0], fds[1])
    }

    /// Four tasks enqueue 2 000 messages each while the reader is slow to start: every message
    /// arrives once, and each task's messages in the order it sent them.
    func testStreamBatchesKeepEveryMessageInOrder() async throws {
        let (a, b) = try pair(Int32(SOCK_STREAM.rawValue))
        let tx = FDConnection(fd: a, medium: .tcp, remoteDescription: "pair a", lengthPrefixed: true)
        let rx = FDConnection(fd: b, medium: .tcp, remoteDescription: "pair b", lengthPrefixed: true)
        await withTaskGroup(of: Void.self) { g in
            for sender in 0..<4 {
                g.addTask {
                    for i in 0..<2000 {
                        tx.enqueue([UInt8(sender), UInt8(i >> 8), UInt8(i & 0xff)] + [UInt8](repeating: UInt8(i & 0xff), count: i % 300))
                    }
                }
            }
        }
        let next = try await within(60, "8000 messages") { () -> [Int] in
            var next = [Int](repeating: 0, count: 4)
            for _ in 0..<8000 {
                let received = try await rx.receive()
                let m = try XCTUnwrap(received)
                XCTAssertGreaterThanOrEqual(m.count, 3)
                let sender = Int(m[0]), i = Int(m[1]) << 8 | Int(m[2])
                XCTAssertEqual(i, next[sender], "sender \(sender) out of order")
                next[sender] = i + 1
                XCTAssertEqual(m.count, 3 + i % 300)
                XCTAssertTrue(m.dropFirst(3).allSatisfy { $0 == UInt8(i & 0xff) })
            }
            return next
        }
        XCTAssertEqual(next, [2000, 2000, 2000, 2000])
        try await within(10, "the flush") { await tx.flush() }
        XCTAssertEqual(tx.queuedBytes, 0)
        tx.close()
        let end = try await within(10, "the end of the stream") { try await rx.receive() }
        XCTAssertNil(end, "the stream ends after the last message")
    }

    /// Messages built with their own length prefix (as a secure link builds them) arrive as
    /// the same messages; a prefix that does not match its message closes the connection
    /// with a reason instead of putting a broken stream on the wire.
    func testPrefixedBatchesArriveWholeAndAWrongPrefixFails() async throws {
        let (a, b) = try pair(Int32(SOCK_STREAM.rawValue))
        let tx = FDConnection(fd: a, medium: .tcp, remoteDescription: "pair a", lengthPrefixed: true)
        let rx = FDConnection(fd: b, medium: .tcp, remoteDescription: "pair b", lengthPrefixed: true)
        XCTAssertEqual(tx.lengthPrefixSize, 2)
        let sizes = [1, 300, 65535, 7, 16_000]
        let batch = sizes.enumerated().map { i, n in [UInt8(n >> 8), UInt8(n & 0xff)] + [UInt8](repeating: UInt8(i), count: n) }
        tx.enqueue(prefixed: batch)
        for (i, n) in sizes.enumerated() {
            let received = try await within(10, "message \(i)") { try await rx.receive() }
            XCTAssertEqual(received, [UInt8](repeating: UInt8(i), count: n))
        }
        tx.enqueue(prefixed: [[0, 5, 1, 2, 3]])  // says 5 bytes, carries 3
        tx.enqueue([9])  // would be read as part of a 5-byte message if the bad one went out
        let after: [UInt8]? = try await within(10, "the end of the stream") { (try? await rx.receive()) ?? nil }
        XCTAssertNil(after, "the stream ended instead of carrying a broken message")
        do {
            _ = try await within(10, "the sender's failure") { try await tx.receive() }
            XCTFail("the sender's connection failed with a reason")
        } catch {
            XCTAssertTrue("\(error)".contains("length prefix"), "\(error)")
        }
        tx.close(); rx.close()
    }

    /// A message queued just before `close` (a closing frame) still reaches the peer when the
    /// socket has room, although the loop had not written it yet.
    func testAMessageQueuedJustBeforeCloseIsDelivered() async throws {
        for type in [Int32(SOCK_STREAM.rawValue), Int32(SOCK_SEQPACKET.rawValue)] {
            let (a, b) = try pair(type)
            let stream = type == Int32(SOCK_STREAM.rawValue)
            let tx = FDConnection(fd: a, medium: stream ? .tcp : .l2cap, remoteDescription: "pair a", lengthPrefixed: stream)
            let rx = FDConnection(fd: b, medium: stream ? .tcp : .l2cap, remoteDescription: "pair b", lengthPrefixed: stream)
            tx.enqueue(Array("bye: duplicate link".utf8))
            tx.close()
            let got = try await within(10, "the message queued before close") { try await rx.receive() }
            XCTAssertEqual(got, Array("bye: duplicate link".utf8), stream ? "stream" : "seqpacket")
            let end = try await within(10, "the end after it") { try await rx.receive() }
            XCTAssertNil(end)
            rx.close()
        }
    }

    /// On a message socket a batch is still one send per message: boundaries survive.
    func testMessageSocketKeepsBoundaries() async throws {
        let (a, b) = try pair(Int32(SOCK_SEQPACKET.rawValue))
        let tx = FDConnection(fd: a, medium: .l2cap, remoteDescription: "pair a", lengthPrefixed: false)
        let rx = FDConnection(fd: b, medium: .l2cap, remoteDescription: "pair b", lengthPrefixed: false)
        let sizes = (0..<500).map { 1 + ($0 * 37) % 900 }
        for (i, n) in sizes.enumerated() { tx.enqueue([UInt8](repeating: UInt8(i & 0xff), count: n)) }
        try await within(30, "500 messages") {
            for (i, n) in sizes.enumerated() {
                let received = try await rx.receive()
                let m = try XCTUnwrap(received)
                XCTAssertEqual(m.count, n, "message \(i)")
                XCTAssertEqual(m.first, UInt8(i & 0xff))
            }
        }
    }

    /// Closing with messages still queued drops them without a crash, accounts for them, and
    /// later sends are ignored.
    func testCloseWithQueuedMessagesLeavesNothingCounted() async throws {
        let (a, b) = try pair(Int32(SOCK_STREAM.rawValue))
        var small = Int32(4096)
        setsockopt(a, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let tx = FDConnection(fd: a, medium: .tcp, remoteDescription: "pair a", lengthPrefixed: true)
        defer { Glibc.close(b) }
        // Nobody reads b: the writer blocks once the socket buffers are full.
        for _ in 0..<200 { tx.enqueue([UInt8](repeating: 7, count: 60_000)) }
        XCTAssertGreaterThan(tx.queuedBytes, 0)
        tx.close()
        try await within(10, "the flush after close") { await tx.flush() }
        XCTAssertEqual(tx.queuedBytes, 0)
        tx.enqueue([1, 2, 3])
        XCTAssertEqual(tx.queuedBytes, 0, "a closed connection takes nothing more")
    }
}
