import PeerLinkWire

/// Tunables of a session.
public struct SessionConfig: Sendable, Equatable {
    /// Negotiation of set-up media (Wi-Fi Direct): timeouts and idle teardown.
    package var upgrade = LinkUpgrade.Config()
    /// How often an idle link is probed.
    public var keepaliveInterval: Duration = .seconds(1)
    /// A link with nothing received for this long is declared dead (the "keepalive bound").
    public var deadAfter: Duration = .seconds(3)
    /// Largest application message, reliable or reassembled.
    public var maxMessageSize = 16 * 1024 * 1024
    /// Largest piece of a message, stream or resource in one frame, while the session has a
    /// slow (Bluetooth) link: a small message waits behind at most one such piece there.
    public var fragmentSize = 16 * 1024
    /// Largest piece while every link of the session is fast (`SessionCore.fastLinksOnly`),
    /// and of stream and resource bytes while the bulk carrier is (`fastBulkCarrier`): a
    /// frame as large as a Noise message takes, so fewer records carry the same bytes (about
    /// 6 % less CPU for 64 KiB messages on loopback; docs/PERFORMANCE.md).
    public var fastFragmentSize = WireLimits.frame - 32
    /// Reliable bytes sent but not yet acknowledged, at most.
    public var sendWindow = 1024 * 1024
    /// When bulk data shares the link that carries messages, it may have about this long of
    /// the link's measured throughput in flight…
    public var sharedBulkTime: Duration = .milliseconds(250)
    /// …and at least this many bytes (also the limit before the throughput is measured).
    public var sharedBulkMinimum = 32 * 1024
    /// Reliable records queued behind a full window, at most (bytes); past it `send` reports backpressure.
    public var maxBacklog = 4 * 1024 * 1024
    /// Credit granted per stream at open, and refilled as the application consumes.
    public var streamWindow: UInt32 = 256 * 1024
    /// Largest credit window a stream's window grows to while the reader keeps up with it
    /// on a fast link (`SessionCore.consumed`): with 256 KiB and credit returned only once
    /// bytes are written to disk, a file could not move faster than 256 KiB per two round trips.
    public var maxStreamWindow = 4 * 1024 * 1024
    /// Acknowledge after this many reliable frames, or `ackDelay` after the first one not yet
    /// acknowledged, whichever is first…
    public var ackEvery = 16
    /// …or once frames of about this many bytes arrived, so a sender whose window is still
    /// small (a shared bulk window opening from `sharedBulkMinimum`) is not held to the timer.
    public var ackBytes = 32 * 1024
    /// Out-of-order reliable frames buffered (possible with several links), at most.
    public var maxReorder = 4096
    /// A carrier with records in flight that has sent nothing back for this long (or longer
    /// on slow or jittery links: see docs/PROTOCOL.md §11.5) is suspected: while another link
    /// is up, its lanes move there and resend what is unacknowledged. The link itself stays
    /// until `deadAfter`.
    public var suspectAfter: Duration = .milliseconds(150)
    /// Main-lane bytes per second that may be copied onto a second link (see
    /// `SessionCore.preferredCopyLink`) until the link policy sets `SessionCore.copyBytesPerSecond`
    /// from that link's throughput; frames beyond the budget go on the carrier only.
    public var messageCopyBytesPerSecond = 32 * 1024

    /// How long a received reliable frame may wait for its acknowledgement: often enough for
    /// the sender to notice a stalled carrier within `suspectAfter`, and not less than 20 ms.
    public var ackDelay: Duration { .milliseconds(ackDelayMillis) }

    /// The default tunables.
    public init() {}

    // The core counts time in whole milliseconds of the caller's monotonic clock.
    package var keepaliveMillis: UInt64 { keepaliveInterval.wholeMilliseconds }
    package var deadAfterMillis: UInt64 { deadAfter.wholeMilliseconds }
    package var suspectAfterMillis: UInt64 { suspectAfter.wholeMilliseconds }
    package var sharedBulkMillis: UInt64 { sharedBulkTime.wholeMilliseconds }
    package var ackDelayMillis: UInt64 { max(20, min(100, keepaliveMillis / 4, suspectAfterMillis / 4)) }
}

/// A link of a session, named by the caller.
public typealias LinkID = UInt64

/// Something the session asks its caller to do or to tell the application.
package enum SessionOutput: Equatable, Sendable {
    /// Send this frame on this link.
    case transmit(link: LinkID, frame: Frame)
    case event(SessionEvent)
}

/// What happened in a session, for the application.
package enum SessionEvent: Equatable, Sendable {
    case message([UInt8], reliable: Bool)
    /// The link sent nothing within `deadAfter` and was dropped from the session.
    case linkDead(LinkID)
    /// The link carries records in flight but nothing sent on it has been acknowledged or
    /// answered for `silentFor` ms (it is silent, or only the peer's direction still works):
    /// its lanes moved to another link until it answers again.
    case linkSuspected(LinkID, silentFor: UInt64)
    /// A suspected link answered a PING (or acknowledged records) again.
    case linkRecovered(LinkID)
    /// A keepalive answer measured this round-trip time.
    case roundTrip(link: LinkID, millis: UInt64)
    case streamOpened(stream: UInt32, name: String)
    case streamData(stream: UInt32, bytes: ArraySlice<UInt8>)
    case streamClosed(stream: UInt32, status: StreamCloseStatus)
    /// The remote granted credit: more bytes may be written on this outgoing stream.
    case streamWritable(stream: UInt32)
    case resourceOffered(stream: UInt32, name: String, size: UInt64, sha256: [UInt8])
    /// An offer whose SHA-256 follows its bytes (`resourceDigest`); `key` names its content.
    case resourceOfferedKeyed(stream: UInt32, name: String, size: UInt64, key: [UInt8])
    /// The SHA-256 of an accepted keyed resource, after its last byte.
    case resourceDigest(stream: UInt32, sha256: [UInt8])
    case resourceAccepted(stream: UInt32, offset: UInt64)
    case resourceResult(stream: UInt32, ok: Bool)
    /// The receiver of one of our resources refused or stopped it, and why (a stream close follows).
    case resourceError(stream: UInt32, error: ResourceError)
    /// A step of a link negotiation from the remote (LINK_SETUP).
    case linkSetup(LinkSetup)
    /// The remote left the session gracefully.
    case remoteLeft(reason: CloseReason, text: String)
    /// The remote broke the protocol; the session should be closed.
    case protocolViolation(String)
}

/// Why a send was refused.
package enum SessionError: Error, Equatable, Sendable, CustomStringConvertible {
    case messageTooLarge(size: Int, limit: Int)
    case backlogFull(bytes: Int, limit: Int)
    case noLink
    case unknownStream(UInt32)
    case noCredit(stream: UInt32, available: Int)
    case closed
    /// The remote's protocol version lacks what was asked for.
    case unsupportedByPeer(String)

    package var description: String {
        switch self {
        case let .messageTooLarge(size, limit): return "message of \(size) bytes is larger than the limit of \(limit) bytes"
        case let .backlogFull(bytes, limit): return "send backlog is full (\(bytes) of \(limit) bytes); wait for the peer to catch up"
        case .noLink: return "the peer has no live link"
        case let .unknownStream(id): return "no open stream \(id)"
        case let .noCredit(id, available): return "stream \(id) has only \(available) bytes of credit"
        case .closed: return "the session is closed"
        case let .unsupportedByPeer(what): return "the peer's PeerLink is too old for \(what)"
        }
    }
}

/// What the session core measured on one link.
package struct LinkStats: Sendable, Equatable {
    /// Milliseconds since the link joined the session.
    package var age: UInt64
    package var rttMillis: UInt64?
    /// Fraction of the last (up to 20) keepalive probes not answered in time.
    package var loss: Double
    /// Estimated capacity in bytes per second, once the link carried data.
    package var throughput: Double?
    /// Silent while carrying data: its lanes moved elsewhere for now.
    package var suspect: Bool
    /// Milliseconds since anything arrived on the link.
    package var silentMillis: UInt64
}
