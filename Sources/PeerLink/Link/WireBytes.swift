import Synchronization

/// Bytes a link moved on its connection as the transport saw them: the Noise handshake,
/// ciphertexts with their authentication tags, and length prefixes where the medium frames
/// with them. Datagrams of a link's UDP path are not included (see `DatagramCounts`).
public struct WireBytes: Sendable, Codable, Equatable {
    /// Bytes handed to the connection.
    public var sent: UInt64
    /// Bytes read from the connection.
    public var received: UInt64

    /// Counts of `sent` and `received` bytes.
    public init(sent: UInt64 = 0, received: UInt64 = 0) {
        self.sent = sent
        self.received = received
    }

    /// Both directions added (wrapping past 2^64, which no link reaches).
    public static func + (a: WireBytes, b: WireBytes) -> WireBytes {
        WireBytes(sent: a.sent &+ b.sent, received: a.received &+ b.received)
    }

    /// Adds `b` to `a` in both directions.
    public static func += (a: inout WireBytes, b: WireBytes) { a = a + b }
}

/// One link's running byte counts: two relaxed atomics, so counting takes no lock.
final class WireTally: Sendable {
    private let sentBytes: Atomic<UInt64>
    private let receivedBytes: Atomic<UInt64>

    init(_ start: WireBytes = WireBytes()) {
        sentBytes = Atomic(start.sent)
        receivedBytes = Atomic(start.received)
    }

    func sent(_ n: Int) { sentBytes.wrappingAdd(UInt64(n), ordering: .relaxed) }
    func received(_ n: Int) { receivedBytes.wrappingAdd(UInt64(n), ordering: .relaxed) }

    var value: WireBytes {
        WireBytes(sent: sentBytes.load(ordering: .relaxed), received: receivedBytes.load(ordering: .relaxed))
    }
}

/// A session's bytes on the wire per medium: its live links' counts plus what links that
/// ended had moved when they ended. Links join and leave under one lock, so a total read
/// from it never goes backwards (bytes a link counts after it left are not added).
final class SessionWireBytes: Sendable {
    private struct State {
        var live: [LinkID: SecureLink] = [:]
        var ended: [Medium: WireBytes] = [:]
    }
    private let state = Mutex(State())

    func linkUp(_ link: SecureLink) { state.withLock { $0.live[link.id] = link } }

    func linkEnded(_ link: SecureLink) {
        state.withLock { s in
            guard s.live.removeValue(forKey: link.id) != nil else { return }
            s.ended[link.medium, default: WireBytes()] += link.wireBytes
        }
    }

    var perMedium: [Medium: WireBytes] {
        state.withLock { s in
            var out = s.ended
            for l in s.live.values { out[l.medium, default: WireBytes()] += l.wireBytes }
            return out
        }
    }
}
