import Foundation
import PeerLink
#if canImport(Glibc)
import Glibc
#endif

/// `peerlink-bench rtt [COUNT]`: request/response round trips inside one loopback session
/// (A sends a reliable message, B answers with it as soon as it arrives, A waits for the
/// answer) against a raw TCP ping-pong in the same process (blocking sockets, TCP_NODELAY,
/// no framing or encryption), for each size in `sizes`. Prints p50/p99 and one JSON line.
enum RoundTripBench {
    static let sizes = [64, 1024]
    static let help = """
        usage: peerlink-bench rtt [COUNT]
          Message round trip in one loopback session (request, immediate answer) against a raw
          TCP ping-pong (TCP_NODELAY, same process, same sizes), 64 B and 1 KiB messages.
          COUNT round trips per size (default 2000) after COUNT/10 warm-up ones, taken in 10
          blocks that alternate with the raw ping-pong's, so both see the same host; prints p50
          and p99 in microseconds, the ratio p50/p50-raw (issue 16's target: <= 3), and a JSON line.
        """

    /// One size's latency distributions, microseconds.
    struct Result {
        let size: Int
        let peerlink: Percentiles
        let raw: Percentiles

        var line: String {
            String(format: "rtt       %5d B   peerlink p50 %7.1f µs  p99 %7.1f µs   raw TCP p50 %6.1f µs  p99 %6.1f µs   p50 ratio %.2f",
                   size, peerlink.p50, peerlink.p99, raw.p50, raw.p99, peerlink.p50 / raw.p50)
        }

        var json: [String: Any] {
            ["size": size, "peerlink_p50_us": rounded(peerlink.p50), "peerlink_p99_us": rounded(peerlink.p99),
             "raw_p50_us": rounded(raw.p50), "raw_p99_us": rounded(raw.p99), "p50_ratio": rounded(peerlink.p50 / raw.p50, 3)]
        }
    }

    static func run(_ args: [String]) async throws {
        if args.first == "--help" || args.first == "-h" { print(help); return }
        guard let count = args.isEmpty ? 2000 : args.first.flatMap(Int.init), count > 0 else { print(help); exit(2) }
        print("PeerLink message round trip, \(count) round trips per size after \(warmup(count)) warm-up, loopback")
        let results = try await measure(count: count)
        for r in results { print(r.line) }
        printJSON(["bench": "rtt", "count": count, "sizes": results.map(\.json)])
    }

    /// Blocks each size's round trips are taken in, PeerLink's and raw TCP's alternating, so
    /// that both see the same host: on this VM the raw ping-pong alone moves between ≈ 13 and
    /// ≈ 55 µs from one stretch of seconds to the next.
    static let blocks = 10

    /// Every size in one session and one raw connection: after a warm-up of each, `blocks`
    /// alternating blocks of PeerLink and raw round trips.
    static func measure(count: Int) async throws -> [Result] {
        let pair = try await sessionPair()
        let echo = Task { await answer(pair.0) }
        defer { echo.cancel() }
        var results: [Result] = []
        for size in sizes {
            let raw = try await RawPingPong(size: size)
            defer { raw.close() }
            let perBlock = max(1, count / blocks)
            _ = try await sessionRoundTrips(requester: pair.1, to: pair.2, size: size, count: warmup(count))
            _ = await raw.roundTrips(warmup(count))
            var pl: [Double] = [], base: [Double] = []
            for _ in 0..<blocks {
                pl += try await sessionRoundTrips(requester: pair.1, to: pair.2, size: size, count: perBlock)
                base += await raw.roundTrips(perBlock)
            }
            results.append(Result(size: size, peerlink: Percentiles(pl), raw: Percentiles(base)))
        }
        await pair.1.disconnect()
        return results
    }

    static func warmup(_ count: Int) -> Int { max(10, count / 10) }

    /// Answers every message with the same bytes, at once.
    private static func answer(_ session: Session) async {
        for await e in session.events {
            if case let .message(from, bytes, _) = e { try? await session.send(bytes, to: [from]) }
        }
    }

    /// Round-trip times in microseconds of `count` request/answer pairs.
    private static func sessionRoundTrips(requester: Session, to peer: PeerID, size: Int, count: Int) async throws -> [Double] {
        let request = [UInt8](repeating: 0x61, count: size)
        var events = requester.events.makeAsyncIterator()
        var samples: [Double] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let t = DispatchTime.now().uptimeNanoseconds
            try await requester.send(request, to: [peer])
            while let e = await events.next() {
                if case .message = e { break }
            }
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - t) / 1000)
        }
        return samples
    }

    /// The baseline: the same exchange on one raw loopback TCP connection, each end a thread
    /// in blocking `send`/`recv`. The echoing end runs until `close`; each block of round
    /// trips runs on a thread of its own.
    final class RawPingPong: @unchecked Sendable {
        private let client: FDConnection, server: FDConnection, listener: TransportListener
        private let c: Int32
        private let size: Int

        init(size: Int) async throws {
            let accepted = AcceptedConnection()
            listener = try TCPTransport(bindHost: "127.0.0.1").listen(port: 0) { accepted.set($0) }
            let dialled = try await TCPTransport().connect(to: TransportEndpoint(medium: .tcp, host: "127.0.0.1", port: listener.port), timeout: .seconds(5))
            guard let client = dialled as? FDConnection, let server = await accepted.wait() as? FDConnection else { throw TransportError.closed }
            (self.client, self.server, self.size) = (client, server, size)
            c = RoundTripBench.noDelay(blockingDescriptor(client))
            let s = RoundTripBench.noDelay(blockingDescriptor(server))
            Thread {
                var buf = [UInt8](repeating: 0, count: size)
                while RoundTripBench.recvAll(s, &buf), (try? sendAll(s, buf)) != nil {}
            }.start()
        }

        /// Times of `count` round trips, microseconds.
        func roundTrips(_ count: Int) async -> [Double] {
            let (c, size) = (self.c, self.size)
            return await withCheckedContinuation { (done: CheckedContinuation<[Double], Never>) in
                Thread {
                    let request = [UInt8](repeating: 0x61, count: size)
                    var buf = [UInt8](repeating: 0, count: size)
                    var samples: [Double] = []
                    samples.reserveCapacity(count)
                    for _ in 0..<count {
                        let t = DispatchTime.now().uptimeNanoseconds
                        guard (try? sendAll(c, request)) != nil, RoundTripBench.recvAll(c, &buf) else { break }
                        samples.append(Double(DispatchTime.now().uptimeNanoseconds - t) / 1000)
                    }
                    done.resume(returning: samples)
                }.start()
            }
        }

        /// Ends the echoing thread (its `recv` sees the end) and releases the sockets.
        func close() {
            client.close()
            server.close()
            listener.close()
        }
    }

    fileprivate static func noDelay(_ fd: Int32) -> Int32 {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// Fills `buffer` from `fd`; false at EOF or error.
    fileprivate static func recvAll(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        var got = 0
        while got < buffer.count {
            let n = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return recv(fd, base + got, raw.count - got, 0)
            }
            if n <= 0 { return false }
            got += n
        }
        return true
    }
}

/// p50 and p99 of a sample set (nearest rank); zero when empty.
struct Percentiles {
    let p50: Double
    let p99: Double

    init(_ samples: [Double]) {
        let s = samples.sorted()
        func rank(_ q: Double) -> Double { s.isEmpty ? 0 : s[min(s.count - 1, Int((q * Double(s.count)).rounded(.up)) - 1)] }
        p50 = rank(0.5)
        p99 = rank(0.99)
    }
}

/// The one connection a baseline's listener accepts, awaited by the dialler.
final class AcceptedConnection: @unchecked Sendable {
    private let lock = NSLock()
    private var connection: MessageConnection?
    private var waiter: CheckedContinuation<MessageConnection?, Never>?

    func set(_ c: MessageConnection) {
        let w: CheckedContinuation<MessageConnection?, Never>? = lock.withLock {
            guard connection == nil else { return nil }
            connection = c
            defer { waiter = nil }
            return waiter
        }
        w?.resume(returning: c)
    }

    func wait() async -> MessageConnection? {
        await withCheckedContinuation { c in
            let now: MessageConnection?? = lock.withLock { if let got = connection { return got }; waiter = c; return nil }
            if let got = now { c.resume(returning: got) }
        }
    }
}
