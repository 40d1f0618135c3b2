import Foundation
import PeerLinkWire
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth
#if canImport(Glibc)
import Glibc
#endif

/// Message `i` of `size` bytes: its number, then a pattern that depends on it.
private func message(_ i: Int, size: Int) -> [UInt8] {
    var m = [UInt8(truncatingIfNeeded: i >> 16), UInt8(truncatingIfNeeded: i >> 8), UInt8(truncatingIfNeeded: i)]
    m.reserveCapacity(max(size, 3))
    for j in 3..<max(size, 3) { m.append(UInt8(truncatingIfNeeded: i &* 31 &+ j)) }
    return m
}

/// Receives `count` messages in batches and checks each against `expected(i)`; fails if they
/// have not all come within `seconds`, saying how many did.
private func receiveAll(_ c: FDConnection, count: Int, from first: Int = 0, limit: Int = 64, within seconds: Double = 60,
                        file: StaticString = #filePath, line: UInt = #line,
                        expected: @escaping @Sendable (Int) -> [UInt8]) async throws {
    let progress = Progress()
    try await within(seconds, "\(count) messages", progress: { "\(progress.value) arrived" }, file: file, line: line) {
        var i = first
        while i < first + count {
            let batch = try await c.receiveBatch(limit: limit)
            let got = try XCTUnwrap(batch, "ended after \(i - first) of \(count)", file: file, line: line)
            for m in got {
                let want = expected(i)
                if m != want {
                    XCTFail("message \(i): \(m.count) bytes, expected \(want.count) (first bytes \(m.prefix(3)))", file: file, line: line)
                    return
                }
                i += 1
                progress.set(i - first)
            }
        }
    }
}

/// A count a bounded wait reports when it gives up.
private final class Progress: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func set(_ v: Int) { lock.withLock { n = v } }
    var value: Int { lock.withLock { n } }
}

/// `FDConnection` on the shared epoll loop: order, boundaries, partial writes, backpressure,
/// ends while calls wait, and one thread for any number of connections. Behaviour only:
/// nothing here is timed (every wait has a generous bound, so a broken build fails instead of
/// hanging).
final class IOLoopTests: XCTestCase {
    private func pair(_ type: Int32) throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw XCTSkip("socketpair: errno \(errno)") }
        return (fds[0], fds[1])
    }

    private var stream: Int32 { Int32(SOCK_STREAM.rawValue) }
    private var seqpacket: Int32 { Int32(SOCK_SEQPACKET.rawValue) }

    private func setBuffer(_ fd: Int32, _ option: Int32, _ bytes: Int32) {
        var v = bytes
        setsockopt(fd, SOL_SOCKET, option, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    private func threads() -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("Threads:") {
            return Int(line.dropFirst(8).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }

    /// 20 000 messages from four tasks on a byte stream, read while they are written: each
    /// task's messages arrive once, in its order.
    func testStreamKeepsTheOrderOfManyMessages() async throws {
        let (a, b) = try pair(stream)
        let tx = FDConnection(fd: a, medium: .tcp, remoteDescription: "a", lengthPrefixed: true)
        let rx = FDConnection(fd: b, medium: .tcp, remoteDescription: "b", lengthPrefixed: true)
        let perSender = 5000
        let reader = Task { () -> [Int] in
            var next = [Int](repeating: 0, count: 4)
            var total = 0
            while total < 4 * perSender {
                guard let batch = try await rx.receiveBatch(limit: 64) else { break }
                for m in batch {
                    let sender = Int(m[0]), i = Int(m[1]) << 8 | Int(m[2])
                    if i != next[sender] || m.count != 3 + i % 500 { return next }  // out of order: stop
                    next[sender] = i + 1
                    total += 1
                }
            }
            return next
        }
        await withTaskGroup(of: Void.self) { g in
            for sender in 0..<4 {
                g.addTask {
                    for i in 0..<perSender {
                        tx.enqueue([UInt8(sender), UInt8(i >> 8), UInt8(i & 0xff)] + [UInt8](repeating: UInt8(i & 0xff), count: i % 500))
                    }
                }
            }
        }
        let next = try await within(60, "the reader's 20 000 messages") { try await reader.value }
        XCTAssertEqual(next, [perSender, perSender, perSender, perSender])
        try await within(30, "the flush") { await tx.flush() }
        XCTAssertEqual(tx.queuedBytes, 0)
        tx.close()
        let end = try await within(10, "the end of the stream") { try await rx.receive() }
        XCTAssertNil(end)
    }

    /// A message socket with a small send buffer (so the loop finishes most writes): each of
    /// 3 000 messages is read as exactly the message that was sent, never two merged.
    func testSeqpacketKeepsBoundariesWhenWritesWaitForRoom() async throws {
        let (a, b) = try pair(seqpacket)
        setBuffer(a, SO_SNDBUF, 4096)
        let tx = FDConnection(fd: a, medium: .l2cap, remoteDescription: "a", lengthPrefixed: false)
        let rx = FDConnection(fd: b, medium: .l2cap, remoteDescription: "b", lengthPrefixed: false)
        let size: @Sendable (Int) -> Int = { (i: Int) in 3 + (i * 97) % 3000 }
        for i in 0..<3000 { tx.enqueue(message(i, size: size(i))) }
        XCTAssertGreaterThan(tx.queuedBytes, 0, "the small buffer filled: the rest waits for the loop")
        try await receiveAll(rx, count: 3000, limit: 16) { message($0, size: size($0)) }
        try await within(30, "the flush") { await tx.flush() }
        XCTAssertEqual(tx.queuedBytes, 0)
    }

    /// Largest messages through small socket buffers, so almost every write is partial; and
    /// again with a small `maxWriteChunk` (RFCOMM's cap), which splits every message.
    func testLargeMessagesSurvivePartialWrites() async throws {
        for chunk in [1 << 20, 777] {
            let (a, b) = try pair(stream)
            setBuffer(a, SO_SNDBUF, 4096)
            setBuffer(b, SO_RCVBUF, 4096)
            let tx = FDConnection(fd: a, medium: .rfcomm, remoteDescription: "a", lengthPrefixed: true, maxWriteChunk: chunk)
            let rx = FDConnection(fd: b, medium: .rfcomm, remoteDescription: "b", lengthPrefixed: true)
            let count = chunk < 1000 ? 40 : 200
            let reader = Task { try await receiveAll(rx, count: count) { message($0, size: 65535) } }
            for i in 0..<count { tx.enqueue(message(i, size: 65535)) }
            try await within(90, "the reader of chunk size \(chunk)") { try await reader.value }
            try await within(30, "the flush") { await tx.flush() }
            XCTAssertEqual(tx.queuedBytes, 0)
        }
    }

    /// A consumer that stops reading: the connection reads ahead only up to its limit and then
    /// leaves the socket alone, the sender's `enqueue` keeps returning and its queue grows, and
    /// when reading resumes every message arrives, in order.
    func testSlowConsumerPushesBackWithoutLosingAnything() async throws {
        let (a, b) = try pair(stream)
        let limit = 64 * 1024
        let tx = FDConnection(fd: a, medium: .tcp, remoteDescription: "a", lengthPrefixed: true)
        let rx = FDConnection(fd: b, medium: .tcp, remoteDescription: "b", lengthPrefixed: true, receiveBufferLimit: limit)
        let count = 200, size = 60_000
        tx.enqueue(message(0, size: size))
        try await receiveAll(rx, count: 1, limit: 1) { message($0, size: size) }  // reading has started
        for i in 1..<count { tx.enqueue(message(i, size: size)) }
        // The kernel holds a few hundred KiB of the 12 MB at most; the rest waits in the queue.
        XCTAssertGreaterThan(tx.queuedBytes, (count - 1) * (size + 2) - 4 << 20)
        let paused = await waitUntil(timeout: 30) { rx.isReadingPaused }
        XCTAssertTrue(paused, "the reader stops at its limit")
        XCTAssertLessThanOrEqual(rx.bufferedInputBytes, limit + 128 * 1024, "read-ahead is bounded")
        XCTAssertGreaterThan(tx.queuedBytes, 0)
        try await receiveAll(rx, count: count - 1, from: 1, limit: 8) { message($0, size: size) }
        try await within(30, "the flush") { await tx.flush() }
        XCTAssertEqual(tx.queuedBytes, 0)
        XCTAssertEqual(rx.bufferedInputBytes, 0)
    }

    /// `close()` while a receive waits ends it with nil; `abort` ends one with its error; a
    /// flush that waits on a peer that never reads returns when the peer goes away.
    func testEndsWhileCallsWait() async throws {
        for type in [stream, seqpacket] {
            let (a, b) = try pair(type)
            defer { Glibc.close(a) }
            let rx = FDConnection(fd: b, medium: .tcp, remoteDescription: "b", lengthPrefixed: type == stream)
            let waiting = Task { try await rx.receive() }
            let started = await waitUntil(timeout: 30) { rx.waitingReceivers == 1 }
            XCTAssertTrue(started)
            rx.close()
            let got = try await within(10, "close ending the waiting receive") { try await waiting.value }
            XCTAssertNil(got, "close ends a waiting receive")
            let again = try await within(10, "a receive after close") { try await rx.receive() }
            XCTAssertNil(again, "and every later one")
        }

        let (a, b) = try pair(stream)
        defer { Glibc.close(a) }
        let rx = FDConnection(fd: b, medium: .tcp, remoteDescription: "b", lengthPrefixed: true)
        let waiting = Task { try await rx.receive() }
        let started = await waitUntil(timeout: 30) { rx.waitingReceivers == 1 }
        XCTAssertTrue(started)
        rx.abort(.pathGone("test"))
        do {
            _ = try await within(10, "abort ending the waiting receive") { try await waiting.value }
            XCTFail("abort fails a waiting receive")
        } catch let e as TransportError {
            XCTAssertEqual(e, .pathGone("test"))
        }

        let (c, d) = try pair(stream)
        setBuffer(c, SO_SNDBUF, 4096)
        let tx = FDConnection(fd: c, medium: .tcp, remoteDescription: "c", lengthPrefixed: true)
        for i in 0..<100 { tx.enqueue(message(i, size: 60_000)) }
        XCTAssertGreaterThan(tx.queuedBytes, 0)
        let flushing = Task { await tx.flush() }
        Glibc.close(d)  // the peer goes away without reading
        try await within(10, "the flush ending when the peer went away") { await flushing.value }
        XCTAssertEqual(tx.queuedBytes, 0)
        do {
            _ = try await within(10, "the failed write reported") { try await tx.receive() }
            XCTFail("the failed write is reported")
        } catch let e as TransportError {
            guard case .system = e else { return XCTFail("\(e)") }
        }
    }

    /// The peer closes in the middle of a frame: the receiver gets the messages before it,
    /// then `truncated`, not a clean end.
    func testPeerClosingMidFrameIsTruncated() async throws {
        let (a, b) = try pair(stream)
        let rx = FDConnection(fd: b, medium: .tcp, remoteDescription: "b", lengthPrefixed: true)
        var bytes = try LengthPrefixedDeframer.frame([1, 2, 3])
        bytes += [0, 10, 1, 2, 3]  // announces 10 bytes, sends 3
        XCTAssertEqual(bytes.withUnsafeBytes { Glibc.write(a, $0.baseAddress, $0.count) }, bytes.count)
        Glibc.close(a)
        let first = try await within(10, "the whole message before the cut") { try await rx.receive() }
        XCTAssertEqual(first, [1, 2, 3])
        do {
            let m = try await within(10, "the cut frame's end") { try await rx.receive() }
            XCTFail("a cut frame must not read as \(String(describing: m))")
        } catch let e as WireError {
            guard case .truncated = e else { return XCTFail("\(e)") }
        }
    }

    /// 200 connections, each with a receive waiting: the process has (about) as many threads
    /// as before, not one more per connection; then each receive gets its message.
    func testThreadsDoNotGrowWithConnections() async throws {
        let before = threads()
        var senders: [FDConnection] = []
        var receivers: [FDConnection] = []
        for _ in 0..<200 {
            let (a, b) = try pair(stream)
            senders.append(FDConnection(fd: a, medium: .tcp, remoteDescription: "a", lengthPrefixed: true))
            receivers.append(FDConnection(fd: b, medium: .tcp, remoteDescription: "b", lengthPrefixed: true))
        }
        let tasks = receivers.map { rx in Task { try await rx.receive() } }
        let waiting = await waitUntil(timeout: 60) { receivers.allSatisfy { $0.waitingReceivers == 1 } }
        XCTAssertTrue(waiting, "every receive is waiting")
        let during = threads()
        XCTAssertLessThan(during - before, 16, "threads before: \(before), with 200 waiting receives: \(during)")
        for (i, tx) in senders.enumerated() { tx.enqueue(message(i, size: 100)) }
        for (i, t) in tasks.enumerated() {
            let got = try await within(30, "receive \(i) of 200") { try await t.value }
            XCTAssertEqual(got, message(i, size: 100))
        }
        for c in senders + receivers { c.close() }
    }
}
