import Foundation
import PeerLinkWire
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth
#if canImport(Glibc)
import Glibc
#endif

/// The read path takes what already arrived in one wake-up (`receiveBatch`): the batches must
/// hold every message once, in order, with their boundaries, and an error behind good
/// messages must come only after those messages were handed over.
final class BatchReceiveTests: XCTestCase {
    private func pair(_ type: Int32) throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw XCTSkip("socketpair: errno \(errno)") }
        return (fds[0], fds[1])
    }

    /// Drains `count` messages in batches of at most `limit`; returns them and the batch count.
    /// Fails after 30 s.
    private func drain(_ c: MessageConnection, count: Int, limit: Int) async throws -> (messages: [[UInt8]], batches: Int) {
        try await within(30, "\(count) messages in batches") {
            var messages: [[UInt8]] = []
            var batches = 0
            while messages.count < count {
                let batch = try await c.receiveBatch(limit: limit)
                let b = try XCTUnwrap(batch, "closed after \(messages.count) of \(count)")
                XCTAssertFalse(b.isEmpty, "a batch holds at least one message")
                XCTAssertLessThanOrEqual(b.count, limit)
                messages += b
                batches += 1
            }
            return (messages, batches)
        }
    }

    private func numbered(_ i: Int) -> [UInt8] {
        [UInt8(i >> 8), UInt8(i & 0xff)] + [UInt8](repeating: UInt8(i & 0xff), count: 1 + i % 200)
    }

    /// 500 messages already in the socket (one write, as a busy sender's batch arrives) come
    /// out in order, many per batch, then the end of the stream.
    func testStreamBatchesHoldWhatArrivedInOrder() async throws {
        let (a, b) = try pair(Int32(SOCK_STREAM.rawValue))
        let rx = FDConnection(fd: b, medium: .tcp, remoteDescription: "pair b", lengthPrefixed: true)
        var bytes: [UInt8] = []
        for i in 0..<500 { bytes += try LengthPrefixedDeframer.frame(numbered(i)) }
        XCTAssertEqual(bytes.withUnsafeBytes { Glibc.write(a, $0.baseAddress, $0.count) }, bytes.count)
        Glibc.close(a)
        let (messages, batches) = try await drain(rx, count: 500, limit: 64)
        XCTAssertEqual(messages, (0..<500).map(numbered))
        XCTAssertLessThan(batches, 500 / 4, "queued messages are taken several per wake-up")
        let end = try await within(10, "the end of the stream") { try await rx.receiveBatch(limit: 64) }
        XCTAssertNil(end, "the stream ends after the last message")
    }

    /// On a message socket each queued message stays one message, and batches still form.
    func testMessageSocketBatchesKeepBoundaries() async throws {
        let (a, b) = try pair(Int32(SOCK_SEQPACKET.rawValue))
        let tx = FDConnection(fd: a, medium: .l2cap, remoteDescription: "pair a", lengthPrefixed: false)
        let rx = FDConnection(fd: b, medium: .l2cap, remoteDescription: "pair b", lengthPrefixed: false)
        // Few enough to sit in the socket's buffers before anyone reads.
        for i in 0..<40 { tx.enqueue(numbered(i)) }
        try await within(10, "the flush") { await tx.flush() }
        let (messages, batches) = try await drain(rx, count: 40, limit: 16)
        XCTAssertEqual(messages, (0..<40).map(numbered))
        XCTAssertLessThan(batches, 40 / 2)
    }

    /// A malformed length prefix behind good messages: the good ones come first, the error
    /// with the next call.
    func testStreamErrorComesAfterTheGoodMessagesBeforeIt() async throws {
        let (a, b) = try pair(Int32(SOCK_STREAM.rawValue))
        let rx = FDConnection(fd: b, medium: .tcp, remoteDescription: "pair b", lengthPrefixed: true)
        var bytes: [UInt8] = []
        for i in 0..<5 { bytes += try LengthPrefixedDeframer.frame(numbered(i)) }
        bytes += [0, 0, 9, 9]  // a zero length: no PeerLink message is empty
        XCTAssertEqual(bytes.withUnsafeBytes { Glibc.write(a, $0.baseAddress, $0.count) }, bytes.count)
        defer { Glibc.close(a) }
        let (messages, _) = try await drain(rx, count: 5, limit: 64)
        XCTAssertEqual(messages, (0..<5).map(numbered))
        do {
            _ = try await within(10, "the zero-length prefix reported") { try await rx.receiveBatch(limit: 64) }
            XCTFail("the zero-length prefix is reported")
        } catch let e as WireError {
            XCTAssertTrue("\(e)".contains("zero-length"), "\(e)")
        }
    }

    /// Over Noise: a forged message behind 50 good frames. The receiver gets all 50, in order,
    /// and then the decryption error; nothing behind the bad message is delivered.
    func testSecureLinkDeliversFramesBeforeAForgedMessageThenFails() async throws {
        let (a, b) = try pair(Int32(SOCK_STREAM.rawValue))
        let ca = FDConnection(fd: a, medium: .tcp, remoteDescription: "pair a", lengthPrefixed: true)
        let cb = FDConnection(fd: b, medium: .tcp, remoteDescription: "pair b", lengthPrefixed: true)
        let token = [UInt8](repeating: 1, count: 16)
        let (sender, accepted) = try await within(20, "both handshakes") { () -> (SecureLink, SecureLink) in
            async let dialled = SecureLink.establish(over: ca, initiator: true, identity: Identity(),
                                                     hello: Hello(displayName: "a", sessionToken: token))
            let accepted = try await SecureLink.establish(over: cb, initiator: false, identity: Identity(),
                                                          hello: Hello(displayName: "b", sessionToken: token))
            return (try await dialled, accepted)
        }
        for i in 0..<50 { sender.send(.ping(token: UInt64(i))) }
        ca.enqueue([UInt8](repeating: 0xee, count: 40))  // not sealed with the link's key
        sender.send(.ping(token: 999))                   // behind the forgery: never delivered
        try await within(10, "the flush") { await ca.flush() }
        let (tokens, failure) = try await within(30, "the 50 frames and the forgery's error") { () -> ([UInt64], Error?) in
            var tokens: [UInt64] = []
            do {
                while let frames = try await accepted.receiveBatch(limit: 64) {
                    for case let .ping(t) in frames { tokens.append(t) }
                }
            } catch {
                return (tokens, error)
            }
            return (tokens, nil)
        }
        XCTAssertEqual(tokens, (0..<50).map { UInt64($0) })
        XCTAssertNotNil(failure, "the forged message ends the link with an error")
        sender.close()
        accepted.close()
    }
}
