import CPeerLinkSys
import Foundation
import TestKit
import XCTest
@testable import PeerLink
#if canImport(Glibc)
import Glibc
#endif

/// Holds the shared I/O loop's thread inside a handler until released, so a test can tell
/// what the queuing thread wrote from what only the loop would have written.
private final class LoopHold: IOLoopHandler, @unchecked Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)
    private var pipeFDs: [Int32] = [-1, -1]
    private var token: UInt64 = 0

    /// Returns once the loop's thread is held (false if it never came within 10 s).
    func hold() throws -> Bool {
        guard pipe(&pipeFDs) == 0 else { throw XCTSkip("pipe: errno \(errno)") }
        token = IOLoop.shared.attach(self)
        guard IOLoop.shared.control(PEERLINK_EPOLL_ADD, fd: pipeFDs[0], events: PEERLINK_EPOLLIN, token: token) == 0 else {
            throw XCTSkip("epoll_ctl: errno \(errno)")
        }
        var one: UInt8 = 1
        _ = Glibc.write(pipeFDs[1], &one, 1)
        return entered.wait(timeout: .now() + 10) == .success
    }

    func release() {
        released.signal()
    }

    func ioReady(_ events: UInt32, scratch: UnsafeMutableRawBufferPointer) {
        entered.signal()
        // A test that fails before it releases the loop must not stall every later test of the
        // process on it: the hold ends after 30 s whatever happens.
        if released.wait(timeout: .now() + 30) == .timedOut { print("LoopHold: never released; the I/O loop goes on after 30 s") }
        _ = IOLoop.shared.control(PEERLINK_EPOLL_DEL, fd: pipeFDs[0], events: 0, token: token)
        IOLoop.shared.detach(token)
        Glibc.close(pipeFDs[0])
        Glibc.close(pipeFDs[1])
    }
}

/// Which thread writes: an answer (the first batch after input arrived, or after a quiet
/// spell) leaves from the queuing thread at once; a batch queued right behind another waits
/// for the loop, so a stream's messages are gathered. Checked with the loop's thread held,
/// so nothing here depends on timing.
final class AnswerWriteTests: XCTestCase {
    private func streamPair() throws -> (FDConnection, FDConnection, rawB: Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw XCTSkip("socketpair: errno \(errno)") }
        let a = FDConnection(fd: fds[0], medium: .tcp, remoteDescription: "a", lengthPrefixed: true)
        let b = FDConnection(fd: fds[1], medium: .tcp, remoteDescription: "b", lengthPrefixed: true)
        // Only the input rule may make the second batch an answer: "quiet" means a minute here.
        a.quietGapForTesting = 60_000_000_000
        return (a, b, fds[1])
    }

    /// Bytes waiting in the socket `fd`, read without taking them.
    private func waitingBytes(_ fd: Int32) -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        return max(0, n)
    }

    func testAnswersLeaveAtOnceAndFollowersWaitForTheLoop() async throws {
        let (a, b, rawB) = try streamPair()
        defer { a.close(); b.close() }
        // Input for `a`: b's request, read by the loop.
        b.enqueue([1, 2, 3])
        let request = try await within(10, "b's request") { try await a.receive() }
        XCTAssertEqual(request, [1, 2, 3])

        let hold = LoopHold()
        defer { hold.release() }
        XCTAssertTrue(try hold.hold(), "the loop's thread was not held within 10 s")
        a.enqueue([4, 5, 6, 7])      // the answer: written by this thread
        a.enqueue([8, 9])            // right behind it, nothing read since: the loop's
        let sentAtOnce = waitingBytes(rawB)
        let queued = a.queuedBytes
        hold.release()

        XCTAssertEqual(sentAtOnce, 6, "the answer (2 + 4 bytes) is in the socket before the loop ran")
        XCTAssertEqual(queued, 4, "the follower (2 + 2 bytes) waits for the loop")
        let (first, second) = try await within(10, "the answer and its follower") { (try await b.receive(), try await b.receive()) }
        XCTAssertEqual(first, [4, 5, 6, 7])
        XCTAssertEqual(second, [8, 9])
    }

    /// The first batch of a connection that queued nothing for `quietGap` is written at once too.
    func testQuietConnectionWritesAtOnce() async throws {
        let (a, b, rawB) = try streamPair()
        defer { a.close(); b.close() }
        a.quietGapForTesting = 0
        let hold = LoopHold()
        defer { hold.release() }
        XCTAssertTrue(try hold.hold(), "the loop's thread was not held within 10 s")
        a.enqueue([1])
        a.enqueue([2, 3])
        let sentAtOnce = waitingBytes(rawB)
        hold.release()
        XCTAssertEqual(sentAtOnce, 3 + 4, "with no quiet gap, each batch leaves from the queuing thread")
        let got = try await within(10, "both batches") { [try await b.receive(), try await b.receive()] }
        XCTAssertEqual(got, [[1], [2, 3]])
    }
}
