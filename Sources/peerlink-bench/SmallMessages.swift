import Foundation
import PeerLink
#if canImport(Glibc)
import Glibc
#endif

/// 100-byte reliable messages against two raw TCP senders, all three run in each round (the
/// host's loopback drifts between speed modes within seconds, PairedRatio.swift):
/// - one `send` per length-prefixed message (TCP_NODELAY, as every PeerLink connection);
/// - batched: the same messages gathered 64 to a `writev` (PeerLink gathers up to 64 queued
///   messages per `sendmsg`; an application can batch as well).
/// The raw receivers only count bytes; PeerLink's delivers each message as an event, encrypted,
/// acknowledged. Each round's ratios are PeerLink's rate over each raw rate of that round.
struct SmallMessagePairs {
    var peerlink: [Double] = []
    var oneSend: [Double] = []
    var batched: [Double] = []

    static let batch = 64

    static func measure(rounds: Int, count: Int, size: Int) async throws -> SmallMessagePairs {
        var p = SmallMessagePairs()
        for _ in 0..<max(1, rounds) {
            p.oneSend.append(try await rawSmallMessages(count: count, size: size))
            p.batched.append(try await rawBatchedMessages(count: count, size: size))
            p.peerlink.append(Double(count) / (try await sessionMessages(count: count, size: size).seconds))
        }
        return p
    }

    var ratiosToOneSend: [Double] { zip(peerlink, oneSend).map { $0 / $1 } }
    var ratiosToBatched: [Double] { zip(peerlink, batched).map { $0 / $1 } }

    static func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }

    var lines: [String] {
        func rounds(_ v: [Double]) -> String { v.map { String(format: "%.2f", $0) }.joined(separator: " ") }
        return [
            String(format: "baseline  raw TCP, 100 B, one send each  %9.0f msg/s  (median of %d rounds)", Self.median(oneSend), oneSend.count),
            String(format: "baseline  raw TCP, 100 B, %d per writev  %9.0f msg/s", Self.batch, Self.median(batched)),
            String(format: "peerlink  reliable 100 B messages       %9.0f msg/s  ratio to one-send %.3f (rounds %@), to batched %.3f (rounds %@)",
                   Self.median(peerlink), Self.median(ratiosToOneSend), rounds(ratiosToOneSend),
                   Self.median(ratiosToBatched), rounds(ratiosToBatched)),
        ]
    }

    var json: [String: Any] {
        ["msgs_per_s": rounded(Self.median(peerlink), 0),
         "raw_one_send_msgs_per_s": rounded(Self.median(oneSend), 0), "raw_batched_msgs_per_s": rounded(Self.median(batched), 0),
         "ratio_to_one_send": rounded(Self.median(ratiosToOneSend), 3), "ratio_to_batched": rounded(Self.median(ratiosToBatched), 3),
         "ratios_to_one_send": ratiosToOneSend.map { rounded($0, 3) }, "ratios_to_batched": ratiosToBatched.map { rounded($0, 3) }]
    }
}

/// Raw TCP on loopback, `count` 2-byte-length-prefixed messages of `size` bytes, gathered
/// `SmallMessagePairs.batch` to a `writev` (each message its own iovec, nothing copied into a
/// bigger buffer); messages per second.
func rawBatchedMessages(count: Int, size: Int) async throws -> Double {
    let message = [UInt8(size >> 8), UInt8(size & 0xff)] + [UInt8](repeating: 0x42, count: size)
    let t = try await rawTCPSeconds(bytes: count * message.count) { fd in
        try message.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { throw TransportError.closed }
            let one = iovec(iov_base: UnsafeMutableRawPointer(mutating: base), iov_len: raw.count)
            var left = count
            while left > 0 {
                let n = min(left, SmallMessagePairs.batch)
                var vectors = [iovec](repeating: one, count: n)
                try writevAll(fd, &vectors)
                left -= n
            }
        }
    }
    return Double(count) / t
}

/// Writes everything `vectors` point at, however many calls it takes (advancing them).
private func writevAll(_ fd: Int32, _ vectors: inout [iovec]) throws {
    var first = 0
    while first < vectors.count {
        let w = vectors.withUnsafeMutableBufferPointer { buffer -> Int in
            guard let base = buffer.baseAddress else { return -1 }
            return writev(fd, base + first, Int32(buffer.count - first))
        }
        if w < 0, errno == EINTR { continue }
        guard w > 0 else { throw TransportError.closed }
        // Skip what was written: whole vectors, then part of the next one.
        var done = w
        while done > 0, first < vectors.count {
            if done >= vectors[first].iov_len {
                done -= vectors[first].iov_len
                first += 1
            } else {
                vectors[first].iov_base = vectors[first].iov_base.map { $0 + done }
                vectors[first].iov_len -= done
                done = 0
            }
        }
    }
}
