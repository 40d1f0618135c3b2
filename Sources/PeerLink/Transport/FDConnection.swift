import Dispatch
import Foundation
import PeerLinkWire
#if canImport(Glibc)
import Glibc
#endif

/// A `MessageConnection` over a connected socket file descriptor (TCP, RFCOMM, L2CAP).
///
/// Reads and writes are blocking calls on two private serial dispatch queues, so they never
/// block Swift's cooperative threads. `lengthPrefixed` adds the 2-byte framing for byte
/// streams; message sockets (SOCK_SEQPACKET) keep boundaries themselves. On a byte stream,
/// messages queued while a send is under way leave together in the next send: under load a
/// small message costs a fraction of a system call, not one each.
public final class FDConnection: MessageConnection, @unchecked Sendable {
    public let medium: Medium
    public let remoteDescription: String
    public let remoteHost: String?
    let fd: Int32
    private let lengthPrefixed: Bool
    private let maxWriteChunk: Int
    private let readQueue = DispatchQueue(label: "peerlink.fd.read")
    private let writeQueue = DispatchQueue(label: "peerlink.fd.write")
    private let lock = NSLock()
    private var closed = false
    private var writeError: TransportError?
    private var queued = 0
    private var pending: [[UInt8]] = []  // under lock: framed messages not yet handed to the writer
    private var writerScheduled = false  // under lock: a drain() is queued or running
    private var deframer = LengthPrefixedDeframer()  // read queue only
    private var readBuffer = [UInt8](repeating: 0, count: 65536 + 2)  // read queue only

    /// Takes ownership of a connected descriptor.
    public init(fd: Int32, medium: Medium, remoteDescription: String, lengthPrefixed: Bool, maxWriteChunk: Int = 1 << 20,
                remoteHost: String? = nil) {
        self.fd = fd
        self.remoteHost = remoteHost
        self.medium = medium
        self.remoteDescription = remoteDescription
        self.lengthPrefixed = lengthPrefixed
        self.maxWriteChunk = maxWriteChunk
    }

    deinit { Glibc.close(fd) }

    public var queuedBytes: Int { lock.withLock { queued } }

    /// The socket itself, for baselines that bypass PeerLink (benchmarks). Do not close it.
    public var rawDescriptor: Int32 { fd }

    public func enqueue(_ message: [UInt8]) {
        let bytes: [UInt8]
        if lengthPrefixed {
            guard let framed = try? LengthPrefixedDeframer.frame(message) else { fail(.badAddress("message over 65535 bytes")); return }
            bytes = framed
        } else {
            bytes = message
        }
        let startWriter: Bool = lock.withLock {
            guard !closed, writeError == nil else { return false }
            queued += bytes.count
            pending.append(bytes)
            if writerScheduled { return false }
            writerScheduled = true
            return true
        }
        if startWriter { writeQueue.async { [self] in drain() } }
    }

    /// Sends what is pending, in order, until nothing is (write queue only). A byte stream
    /// takes everything pending in one send; a message socket one send per message.
    private func drain() {
        while true {
            let batch: [[UInt8]] = lock.withLock {
                if closed || writeError != nil {
                    queued -= pending.reduce(0) { $0 + $1.count }
                    pending.removeAll()
                }
                if pending.isEmpty { writerScheduled = false }
                defer { pending.removeAll(keepingCapacity: true) }
                return pending
            }
            if batch.isEmpty { return }
            let size = batch.reduce(0) { $0 + $1.count }
            defer { lock.withLock { queued -= size } }
            let error: TransportError?
            if lengthPrefixed, batch.count > 1 {
                var joined: [UInt8] = []
                joined.reserveCapacity(size)
                for m in batch { joined += m }
                error = writeAll(joined)
            } else {
                error = batch.lazy.compactMap { self.writeAll($0) }.first
            }
            if let error { fail(error) }
        }
    }

    public func flush() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            writeQueue.async { c.resume() }
        }
    }

    public func receive() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { c in
            readQueue.async { [self] in c.resume(with: Result { try readMessage() }) }
        }
    }

    /// On a byte stream, the messages the last read brought in besides the first; on a message
    /// socket, whatever more is queued in the kernel (read without waiting).
    public func receiveBatch(limit: Int) async throws -> [[UInt8]]? {
        try await withCheckedThrowingContinuation { c in
            readQueue.async { [self] in c.resume(with: Result { try readBatch(limit: limit) }) }
        }
    }

    public func close() {
        let first: Bool = lock.withLock {
            defer { closed = true }
            return !closed
        }
        if first { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Fails the connection now with `error` (pending and later `receive()` calls throw it).
    func abort(_ error: TransportError) { fail(error) }

    private func fail(_ e: TransportError) {
        lock.withLock { if writeError == nil { writeError = e } }
        shutdown(fd, Int32(SHUT_RDWR))
    }

    private func writeAll(_ bytes: [UInt8]) -> TransportError? {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                let len = min(bytes.count - offset, maxWriteChunk)
                return Glibc.send(fd, base + offset, len, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                return .system(operation: "send to \(remoteDescription)", errno: errno)
            }
            offset += n
        }
        return nil
    }

    private func readBatch(limit: Int) throws -> [[UInt8]]? {
        guard let first = try readMessage() else { return nil }
        var batch = [first]
        while batch.count < max(1, limit) {
            if lengthPrefixed {
                // A malformed length is reported by the next receive, after these are handled.
                guard let m = try? deframer.next() else { break }
                batch.append(m)
            } else {
                let n = readBuffer.withUnsafeMutableBytes { raw in Glibc.recv(fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT)) }
                guard n > 0 else { break }  // nothing queued, or closed/failed: the next receive says so
                batch.append(Array(readBuffer[0..<n]))
            }
        }
        return batch
    }

    private func readMessage() throws -> [UInt8]? {
        while true {
            if lengthPrefixed, let m = try deframer.next() { return m }
            if lock.withLock({ closed }) { return nil }
            let n = readBuffer.withUnsafeMutableBytes { raw in Glibc.recv(fd, raw.baseAddress, raw.count, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                if let w = lock.withLock({ writeError }) { throw w }
                if lock.withLock({ closed }) { return nil }
                throw TransportError.system(operation: "receive from \(remoteDescription)", errno: errno)
            }
            if n == 0 {
                if let w = lock.withLock({ writeError }) { throw w }
                if lengthPrefixed, deframer.pendingBytes > 0, !lock.withLock({ closed }) {
                    throw WireError.truncated(field: "Noise message", needed: 2, available: deframer.pendingBytes)
                }
                return nil
            }
            if !lengthPrefixed { return Array(readBuffer[0..<n]) }
            deframer.append(Array(readBuffer[0..<n]))
        }
    }
}

