import CPeerLinkSys
import Foundation
import PeerLinkWire
#if canImport(Glibc)
import Glibc
#endif

/// A `MessageConnection` over a connected socket file descriptor (TCP, RFCOMM, L2CAP).
///
/// The socket is non-blocking and served by the process's `IOLoop` (one thread for every
/// connection) instead of threads of its own:
///
/// - **Writes** of a stream of messages are made by the loop: queuing a message asks for
///   `EPOLLOUT` when no write is under way, and the loop writes everything queued by then, in
///   order. The queuing thread (a session's actor) does not wait in a system call, and
///   messages queued while the loop wakes leave together (measured: 45-60 % more 100-byte
///   messages per second, more 64 KiB throughput with less CPU). An **answer** is written at
///   once by the queuing thread instead, one `sendmsg`, the rest (if the socket is full) left
///   to the loop: the first batch queued after input arrived, or after the connection was
///   quiet for `quietGap`. Such a batch has nothing to gather and would only wait for the
///   loop's wake-up (measured: loopback round trip p50 35-40 % shorter). When the socket is
///   full (`EAGAIN`) the rest waits for the next `EPOLLOUT`. `close` first writes what the
///   socket still takes. A byte stream (`lengthPrefixed`, TCP and RFCOMM) gathers everything
///   pending into one `sendmsg` of up to 64 pieces and `maxWriteChunk` bytes, and partial
///   writes continue where they stopped; a message socket (SOCK_SEQPACKET, L2CAP) gets
///   exactly one `send` per message, so messages are never merged into one SDU.
/// - **Reads** begin with the first `receive` and then run on the loop whenever the socket is
///   readable: up to a budget per turn, deframed there, and handed to a waiting `receive` as
///   one batch. Without a waiting receiver, messages are buffered up to `receiveBufferLimit`
///   bytes; then the loop stops reading the socket (`EPOLLIN` is dropped from its interest),
///   so a slow consumer pushes back on the sender through the kernel's buffers and flow
///   control, and reading resumes once the consumer has taken some.
///
/// Every continuation is resumed outside the lock, once: it is removed from the state under
/// the lock by whoever resumes it.
package final class FDConnection: MessageConnection, IOLoopHandler, @unchecked Sendable {
    /// The medium the socket belongs to.
    public let medium: Medium
    public let remoteDescription: String
    public let remoteHost: String?
    package let fd: Int32
    private let lengthPrefixed: Bool
    private let maxWriteChunk: Int
    private let receiveBufferLimit: Int
    private let loop: IOLoop
    private let held: (any Sendable)?
    private var token: UInt64 = 0  // set once in init

    /// Default for `receiveBufferLimit`: messages read ahead of the consumer, in bytes.
    public static let defaultReceiveBufferLimit = 1 << 20
    /// Most bytes the loop reads from one socket per turn before serving the others.
    static let readBudget = 256 * 1024
    /// Most system calls `close` makes to write what is still queued.
    static let closingWriteCalls = 8
    /// Most system calls per connection per loop turn.
    static let loopWriteCalls = 16
    /// Most messages (iovecs) gathered into one `sendmsg`.
    static let gather = 64
    /// A connection that queued nothing for this long (ns) writes its next batch at once.
    static let quietGap: UInt64 = 1_000_000

    private enum Writer { case idle, active, waitingForRoom }
    private enum ReadEnd { case eof(partialBytes: Int), malformed(Error), failed(errno: Int32) }
    private struct Receiver { let continuation: CheckedContinuation<[[UInt8]]?, Error>; let limit: Int }

    /// Continuations to resume and a shutdown to make once the lock is released.
    private struct Effects {
        var flushed: [CheckedContinuation<Void, Never>] = []
        var delivered: [(CheckedContinuation<[[UInt8]]?, Error>, Result<[[UInt8]]?, Error>)] = []
        var shutdown = false
    }

    private let lock = NSLock()
    // Everything below is under `lock`, except `deframer` (the loop thread's own).
    private var closed = false
    private var failure: TransportError?
    // Writing: messages (framed on streams) not yet written, oldest at `pendingHead`, of which
    // `headOffset` bytes are already out.
    private var pending: [[UInt8]] = []
    private var pendingHead = 0
    private var headOffset = 0
    private var accepted: UInt64 = 0  // bytes ever queued
    private var finished: UInt64 = 0  // bytes written, or dropped by close/failure
    private var writer = Writer.idle
    private var lastQueued: UInt64 = 0  // CLOCK_MONOTONIC ns of the last batch queued
    private var quietGapLocked = FDConnection.quietGap
    private var inputSinceQueued = false  // messages were read since the last batch was queued
    private var flushWaiters: [(target: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
    // Reading: messages read and not yet taken, oldest at `inboxHead`.
    private var readStarted = false
    private var inbox: [[UInt8]] = []
    private var inboxHead = 0
    private var inboxBytes = 0
    private var readEnd: ReadEnd?
    private var receivers: [Receiver] = []  // only while the inbox is empty
    private var interest: UInt32?  // the epoll mask registered; nil: not in the loop's set
    private var deframer = LengthPrefixedDeframer()  // loop thread only

    /// Takes ownership of a connected descriptor and makes it non-blocking.
    /// - Parameters:
    ///   - fd: a connected socket; the connection closes it.
    ///   - medium: the medium the connection reports.
    ///   - remoteDescription: the remote address, for logs and `peerlink links`.
    ///   - lengthPrefixed: a byte stream: add and strip the 2-byte length prefix.
    ///   - maxWriteChunk: largest single write on a byte stream.
    ///   - remoteHost: the remote's numeric IP address on IP media (to reach its UDP port); nil
    ///     on others.
    ///   - receiveBufferLimit: bytes read ahead of the consumer before the socket is left unread.
    public convenience init(fd: Int32, medium: Medium, remoteDescription: String, lengthPrefixed: Bool, maxWriteChunk: Int = 1 << 20,
                remoteHost: String? = nil, receiveBufferLimit: Int = FDConnection.defaultReceiveBufferLimit) {
        self.init(fd: fd, medium: medium, remoteDescription: remoteDescription, lengthPrefixed: lengthPrefixed,
                  maxWriteChunk: maxWriteChunk, remoteHost: remoteHost, receiveBufferLimit: receiveBufferLimit, holding: nil)
    }

    /// As above; `holding` lives as long as the connection (a registration of the link that
    /// its release undoes, e.g. `StaleACL.Registration`).
    package init(fd: Int32, medium: Medium, remoteDescription: String, lengthPrefixed: Bool, maxWriteChunk: Int = 1 << 20,
                 remoteHost: String? = nil, receiveBufferLimit: Int = FDConnection.defaultReceiveBufferLimit, holding: (any Sendable)?) {
        self.held = holding
        self.fd = fd
        self.remoteHost = remoteHost
        self.medium = medium
        self.remoteDescription = remoteDescription
        self.lengthPrefixed = lengthPrefixed
        self.maxWriteChunk = max(1, maxWriteChunk)
        self.receiveBufferLimit = max(1, receiveBufferLimit)
        self.loop = IOLoop.shared
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        token = loop.attach(self)
    }

    deinit {
        // No call can be waiting here: each holds a reference to the connection.
        lock.withLock {
            if interest != nil { _ = loop.control(PEERLINK_EPOLL_DEL, fd: fd, events: 0, token: token) }
        }
        loop.detach(token)
        Glibc.close(fd)
    }

    public var queuedBytes: Int { lock.withLock { Int(accepted - finished) } }

    /// The socket itself, for baselines that bypass PeerLink (benchmarks). It is non-blocking,
    /// and once `receive` was called its input belongs to the I/O loop. Do not close it.
    public var rawDescriptor: Int32 { fd }

    /// For tests: `receive` calls waiting, bytes read ahead of the consumer, and whether the
    /// socket is left unread because those reached `receiveBufferLimit`.
    var waitingReceivers: Int { lock.withLock { receivers.count } }
    var bufferedInputBytes: Int { lock.withLock { inboxBytes } }
    /// For tests: how long (ns) the connection must have queued nothing for its next batch to
    /// be written at once (`quietGap` by default).
    var quietGapForTesting: UInt64 {
        get { lock.withLock { quietGapLocked } }
        set { lock.withLock { quietGapLocked = newValue } }
    }
    var isReadingPaused: Bool {
        lock.withLock { readStarted && readEnd == nil && !closed && failure == nil && inboxBytes >= receiveBufferLimit }
    }

    // MARK: Writing

    public func enqueue(_ message: [UInt8]) {
        guard lengthPrefixed else { enqueue(prefixed: [message]); return }
        guard (1...WireLimits.noiseMessage).contains(message.count) else {
            fail(.unsupported("a message of \(message.count) bytes (a stream carries 1 to 65535 per message)")); return
        }
        var framed = [UInt8]()
        framed.reserveCapacity(message.count + 2)
        framed.append(UInt8(message.count >> 8))
        framed.append(UInt8(message.count & 0xff))
        framed.append(contentsOf: message)
        enqueue(prefixed: [framed])
    }

    /// A byte stream carries each message after its 2-byte length; datagrams need none.
    public var lengthPrefixSize: Int { lengthPrefixed ? 2 : 0 }

    public func enqueue(prefixed messages: [[UInt8]]) {
        var batch = messages
        var bytes = 0
        if lengthPrefixed {
            for m in batch {
                guard m.count > 2, m.count - 2 == Int(m[0]) << 8 | Int(m[1]) else {
                    fail(.unsupported("a message whose length prefix does not match its \(max(0, m.count - 2)) bytes")); return
                }
                bytes += m.count
            }
        } else {
            batch.removeAll { $0.isEmpty }  // an empty datagram says nothing
            for m in batch { bytes += m.count }
        }
        guard !batch.isEmpty else { return }
        var fx = Effects()
        let now = Self.monotonicNanoseconds()
        let writeNow: Bool = lock.withLock {
            guard !closed, failure == nil else { return false }
            accepted += UInt64(bytes)
            pending.append(contentsOf: batch)
            let answer = inputSinceQueued || now &- lastQueued >= quietGapLocked
            inputSinceQueued = false
            lastQueued = now
            guard writer == .idle else { return false }
            if answer {
                writer = .active
                return true
            }
            // The loop writes, when the socket takes more (`EPOLLOUT`, at once when it has
            // room): what is queued meanwhile leaves in the same `sendmsg`
            // (docs/PERFORMANCE.md: writes on the loop).
            writer = .waitingForRoom
            updateInterestLocked(&fx)
            return false
        }
        run(fx)
        // An answer goes out now: one system call, what the socket does not take is the loop's.
        if writeNow { runWriter(calls: 1) }
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
    }

    public func flush() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now: Bool = lock.withLock {
                if finished >= accepted { return true }
                flushWaiters.append((accepted, c))
                return false
            }
            if now { c.resume() }
        }
    }

    /// Writes what is pending while this thread is the writer (`writer == .active`), for at
    /// most `calls` system calls; then hands over to the loop (`.waitingForRoom`, `EPOLLOUT`)
    /// if anything is left, or goes idle.
    private func runWriter(calls: Int) {
        var left = calls
        while true {
            var fx = Effects()
            let batch: (chunks: [[UInt8]], offset: Int)? = lock.withLock {
                if closed || failure != nil || pendingHead == pending.count {
                    writer = .idle
                } else if left == 0 {
                    writer = .waitingForRoom
                } else {
                    let end = min(pending.count, pendingHead + FDConnection.gather)
                    return (Array(pending[pendingHead..<end]), headOffset)
                }
                updateInterestLocked(&fx)
                return nil
            }
            guard let batch else { run(fx); return }
            left -= 1
            let (written, messages, error) = lengthPrefixed ? writeStream(batch.chunks, offset: batch.offset)
                                                             : writeMessages(batch.chunks)
            let blocked: Bool = lock.withLock {
                // A close or failure meanwhile already dropped (and counted) everything pending.
                guard !closed, failure == nil else { return false }
                consumeLocked(bytes: written, messages: messages, &fx)
                if let error {
                    if error == EAGAIN || error == EWOULDBLOCK {
                        writer = .waitingForRoom
                        updateInterestLocked(&fx)
                        return true
                    }
                    writer = .idle
                    failLocked(.system(operation: "send to \(remoteDescription)", errno: error), &fx)
                    return true
                }
                return false
            }
            run(fx)
            if blocked { return }
        }
    }

    /// One `sendmsg` of as much of `chunks` as fits `maxWriteChunk`; the first chunk starts
    /// at `offset`. Returns the bytes written, or the errno that stopped it.
    private func writeStream(_ chunks: [[UInt8]], offset: Int) -> (Int, Int, Int32?) {
        var vectors: [iovec] = []
        vectors.reserveCapacity(chunks.count)
        var error: Int32 = 0
        let n = FDConnection.withVectors(chunks, index: 0, offset: offset, room: maxWriteChunk, &vectors) { v in
            var header = msghdr()
            return v.withUnsafeMutableBufferPointer { p -> Int in
                header.msg_iov = p.baseAddress
                header.msg_iovlen = p.count
                while true {
                    let r = sendmsg(fd, &header, Int32(MSG_NOSIGNAL))
                    if r >= 0 { return r }
                    error = errno  // before anything else can touch it
                    if error != EINTR { return r }
                }
            }
        }
        if n < 0 { return (0, 0, error) }
        return (n, 0, nil)
    }

    /// Points `vectors` at the chunks (nested so every array stays pinned during the call),
    /// at most `room` bytes in all, then calls `body`.
    private static func withVectors(_ chunks: [[UInt8]], index: Int, offset: Int, room: Int, _ vectors: inout [iovec],
                                    _ body: (inout [iovec]) -> Int) -> Int {
        guard index < chunks.count, room > 0 else { return body(&vectors) }
        return chunks[index].withUnsafeBytes { raw -> Int in
            let skip = index == 0 ? offset : 0
            guard let base = raw.baseAddress, raw.count > skip else {
                return withVectors(chunks, index: index + 1, offset: 0, room: room, &vectors, body)
            }
            let length = min(raw.count - skip, room)
            vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: base + skip), iov_len: length))
            return withVectors(chunks, index: index + 1, offset: 0, room: room - length, &vectors, body)
        }
    }

    /// One `send` per message, in order, until one would block. Returns the bytes and
    /// messages written, and the errno that stopped it.
    private func writeMessages(_ messages: [[UInt8]]) -> (Int, Int, Int32?) {
        var bytes = 0
        for (i, m) in messages.enumerated() {
            while true {
                var error: Int32 = 0
                let r = m.withUnsafeBytes { raw -> Int in
                    let r = Glibc.send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
                    if r < 0 { error = errno }
                    return r
                }
                if r >= 0 { break }  // a datagram leaves whole or not at all
                if error == EINTR { continue }
                return (bytes, i, error)
            }
            bytes += m.count
        }
        return (bytes, messages.count, nil)
    }

    /// Removes what was written from the front of `pending` and wakes the flushes it satisfies.
    private func consumeLocked(bytes: Int, messages: Int, _ fx: inout Effects) {
        if lengthPrefixed {
            var left = bytes
            while left > 0, pendingHead < pending.count {
                let rest = pending[pendingHead].count - headOffset
                if left >= rest {
                    left -= rest
                    pendingHead += 1
                    headOffset = 0
                } else {
                    headOffset += left
                    left = 0
                }
            }
        } else {
            pendingHead += messages
        }
        finished += UInt64(bytes)
        Self.compact(&pending, head: &pendingHead)
        if !flushWaiters.isEmpty {
            let done = flushWaiters.filter { $0.target <= finished }
            if !done.isEmpty {
                fx.flushed += done.map(\.continuation)
                flushWaiters.removeAll { $0.target <= finished }
            }
        }
    }

    // MARK: Reading

    public func receive() async throws -> [UInt8]? {
        try await receiveBatch(limit: 1)?.first
    }

    /// The next message and whatever else was already read behind it, at most `limit`.
    public func receiveBatch(limit: Int) async throws -> [[UInt8]]? {
        let limit = max(1, limit)
        // Fast path: something is already here (or the end is), no suspension.
        var fx = Effects()
        let ready: Result<[[UInt8]]?, Error>? = lock.withLock {
            let r = takeLocked(limit: limit, &fx)
            if r == nil, !readStarted {
                readStarted = true
                updateInterestLocked(&fx)
            }
            return r
        }
        run(fx)
        if let ready { return try ready.get() }
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<[[UInt8]]?, Error>) in
            var fx = Effects()
            lock.withLock {
                receivers.append(Receiver(continuation: c, limit: limit))
                serveReceiversLocked(&fx)
            }
            run(fx)
        }
    }

    /// Messages from the inbox, or how the connection ended; nil when a receiver must wait.
    private func takeLocked(limit: Int, _ fx: inout Effects) -> Result<[[UInt8]]?, Error>? {
        let available = inbox.count - inboxHead
        if available > 0 {
            let n = min(limit, available)
            let batch = Array(inbox[inboxHead..<(inboxHead + n)])
            inboxHead += n
            inboxBytes -= batch.reduce(0) { $0 + $1.count }
            Self.compact(&inbox, head: &inboxHead)
            updateInterestLocked(&fx)  // reading may resume
            return .success(batch)
        }
        return endLocked()
    }

    /// How receiving ends once the inbox is empty, or nil while it has not ended.
    private func endLocked() -> Result<[[UInt8]]?, Error>? {
        if let failure { return .failure(failure) }
        if case let .malformed(e) = readEnd { return .failure(e) }
        if closed { return .success(nil) }
        switch readEnd {
        case let .eof(partial)?:
            if partial > 0 { return .failure(WireError.truncated(field: "Noise message", needed: 2, available: partial)) }
            return .success(nil)
        case let .failed(e)?:
            return .failure(TransportError.system(operation: "receive from \(remoteDescription)", errno: e))
        case .malformed?, nil:
            return nil
        }
    }

    /// Hands inbox messages (or the end) to waiting receivers, oldest first.
    private func serveReceiversLocked(_ fx: inout Effects) {
        while let first = receivers.first {
            guard let result = takeLocked(limit: first.limit, &fx) else { return }
            receivers.removeFirst()
            fx.delivered.append((first.continuation, result))
        }
    }

    /// Called on the loop's thread.
    func ioReady(_ events: UInt32, scratch: UnsafeMutableRawBufferPointer) {
        if events & (PEERLINK_EPOLLOUT | PEERLINK_EPOLLERR | PEERLINK_EPOLLHUP) != 0 {
            let write: Bool = lock.withLock {
                guard writer == .waitingForRoom else { return false }
                writer = .active
                return true
            }
            if write { runWriter(calls: FDConnection.loopWriteCalls) }
        }
        if events & (PEERLINK_EPOLLIN | PEERLINK_EPOLLRDHUP | PEERLINK_EPOLLERR | PEERLINK_EPOLLHUP) != 0 {
            readAvailable(scratch)
        }
    }

    /// Reads what the socket has, up to the budget and the room left in the inbox (loop thread).
    private func readAvailable(_ scratch: UnsafeMutableRawBufferPointer) {
        let start: Int? = lock.withLock { wantsInputLocked ? receiveBufferLimit - inboxBytes : nil }
        guard var room = start, let base = scratch.baseAddress else { return }
        var messages: [[UInt8]] = []
        var bytes = 0
        var budget = FDConnection.readBudget
        var end: ReadEnd?
        while room > 0, budget > 0 {
            // A byte stream reads no more than there is room for; a datagram must be read whole.
            let want = lengthPrefixed ? min(scratch.count, max(room, 4096)) : scratch.count
            let n = Glibc.recv(fd, base, want, 0)
            if n < 0 {
                if errno == EINTR { continue }
                if errno != EAGAIN, errno != EWOULDBLOCK { end = .failed(errno: errno) }
                break
            }
            if n == 0 {
                end = .eof(partialBytes: lengthPrefixed ? deframer.pendingBytes : 0)
                break
            }
            budget -= n
            let got = UnsafeRawBufferPointer(start: base, count: n)
            if lengthPrefixed {
                do {
                    try deframer.take(got) { m in
                        bytes += m.count
                        room -= m.count
                        messages.append(m)
                    }
                } catch {
                    // Reported after the good messages before it.
                    end = .malformed(error)
                    break
                }
            } else {
                bytes += n
                room -= n
                messages.append(Array(got))
            }
        }
        var fx = Effects()
        lock.withLock {
            if !closed, !messages.isEmpty {
                inputSinceQueued = true
                inbox += messages
                inboxBytes += bytes
            }
            if let end, readEnd == nil { readEnd = end }
            serveReceiversLocked(&fx)
            updateInterestLocked(&fx)
        }
        run(fx)
    }

    /// Reading is on: started, not ended, and the inbox has room.
    private var wantsInputLocked: Bool {
        readStarted && readEnd == nil && !closed && failure == nil && inboxBytes < receiveBufferLimit
    }

    /// Brings the loop's interest in the socket in line with the state: `EPOLLIN` while reading
    /// is on, `EPOLLOUT` while a write waits for room, out of the set when neither (a socket
    /// nobody waits on must not report its hang-up forever).
    private func updateInterestLocked(_ fx: inout Effects) {
        var mask: UInt32 = 0
        if wantsInputLocked { mask |= PEERLINK_EPOLLIN | PEERLINK_EPOLLRDHUP }
        if writer == .waitingForRoom { mask |= PEERLINK_EPOLLOUT }
        guard mask != interest ?? 0 else { return }
        let op: Int32
        if mask == 0 {
            op = PEERLINK_EPOLL_DEL
        } else {
            op = interest == nil ? PEERLINK_EPOLL_ADD : PEERLINK_EPOLL_MOD
        }
        let e = loop.control(op, fd: fd, events: mask, token: token)
        if e == 0 || op == PEERLINK_EPOLL_DEL {
            interest = mask == 0 ? nil : mask
        } else {
            failLocked(.system(operation: "watch \(remoteDescription) for I/O (epoll_ctl)", errno: e), &fx)
        }
    }

    // MARK: Ending

    public func close() {
        // What is queued goes out now if the socket takes it, as it would have had the loop
        // got to it first (a closing frame queued just before `close`); the rest is dropped.
        let writeNow: Bool = lock.withLock {
            guard !closed, failure == nil, writer == .waitingForRoom, pendingHead < pending.count else { return false }
            writer = .active
            return true
        }
        if writeNow { runWriter(calls: FDConnection.closingWriteCalls) }
        var fx = Effects()
        lock.withLock {
            guard !closed else { return }
            closed = true
            dropWritesLocked(&fx)
            serveReceiversLocked(&fx)
            updateInterestLocked(&fx)
            fx.shutdown = true
        }
        run(fx)
    }

    /// Fails the connection now with `error` (pending and later `receive()` calls throw it,
    /// after the messages already read).
    func abort(_ error: TransportError) { fail(error) }

    private func fail(_ e: TransportError) {
        var fx = Effects()
        lock.withLock { failLocked(e, &fx) }
        run(fx)
    }

    private func failLocked(_ e: TransportError, _ fx: inout Effects) {
        if failure == nil { failure = e }
        dropWritesLocked(&fx)
        serveReceiversLocked(&fx)
        updateInterestLocked(&fx)
        fx.shutdown = true
    }

    /// Forgets everything pending (counted as finished) and releases every flush.
    private func dropWritesLocked(_ fx: inout Effects) {
        finished = accepted
        pending.removeAll()
        pendingHead = 0
        headOffset = 0
        if writer == .waitingForRoom { writer = .idle }  // an active writer sees the end itself
        fx.flushed += flushWaiters.map(\.continuation)
        flushWaiters.removeAll()
    }

    private func run(_ fx: Effects) {
        if fx.shutdown { shutdown(fd, Int32(SHUT_RDWR)) }
        for c in fx.flushed { c.resume() }
        for (c, r) in fx.delivered { c.resume(with: r) }
    }

    /// Drops the taken front of a queue read from `head`: all of it once everything is taken,
    /// else only when the taken part is large and at least half the array.
    private static func compact(_ queue: inout [[UInt8]], head: inout Int) {
        if head == queue.count {
            queue.removeAll(keepingCapacity: queue.capacity <= 1024)
            head = 0
        } else if head >= 1024, head * 2 >= queue.count {
            queue.removeFirst(head)
            head = 0
        }
    }
}
