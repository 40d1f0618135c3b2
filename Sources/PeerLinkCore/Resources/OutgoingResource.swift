import PeerLinkWire

/// The sender's side of one resource (PROTOCOL §9.6–9.9), from its offer to the receiver's
/// verdict: what the receiver answered, how far the bytes went, and what the sending loop does
/// next. The loop feeds it the receiver's answers and the state of the link (credit, a full
/// backlog, the bytes it has read ahead) and carries out the step it is given.
public struct OutgoingResource: Sendable, Equatable {
    /// Bytes read from the file at once (ahead of the credit).
    public static let readChunk = 1 << 20
    /// Most bytes handed to the session at once.
    public static let writePiece = 64 * 1024

    public enum Phase: Sendable, Equatable {
        /// Offered; the receiver has not answered.
        case offered
        /// Accepted: bytes go from `start` on.
        case sending
        /// Every byte is written and the stream closed: the receiver is checking the hash.
        case awaitingVerdict
        /// The receiver's verdict: the SHA-256 check passed or failed.
        case finished(ok: Bool)
        /// The receiver refused or stopped it (with its reason when it gave one).
        case refused(ResourceError?)
    }

    public let size: UInt64
    public private(set) var phase: Phase = .offered
    /// Where the receiver asked the bytes to start (its part file's length, for a resume).
    public private(set) var start: UInt64 = 0
    /// Bytes handed to the session, counting from the file's start.
    public private(set) var sent: UInt64 = 0
    /// Whether the receiver accepted before anything else happened (a refusal after it is a cancel).
    public private(set) var wasAccepted = false
    private var lastReported: UInt64 = 0

    public init(size: UInt64) { self.size = size }

    /// The receiver accepted from `offset` (clamped to the size). Ignored unless offered.
    public mutating func accepted(offset: UInt64) {
        guard phase == .offered else { return }
        start = min(offset, size)
        sent = start
        lastReported = start
        wasAccepted = true
        phase = .sending
    }

    /// The receiver's verdict. Ignored unless every byte went.
    public mutating func verdict(ok: Bool) {
        guard phase == .awaitingVerdict else { return }
        phase = .finished(ok: ok)
    }

    /// The receiver refused or cancelled: final, whatever came before, unless a verdict came.
    public mutating func refused(_ reason: ResourceError?) {
        if case .finished = phase { return }
        phase = .refused(reason)
    }

    /// What the sending loop does next.
    public enum Step: Sendable, Equatable {
        /// Wait for the receiver or for the link.
        case wait
        /// Read `count` bytes of the file at `offset` (nothing is left in the read-ahead).
        case read(offset: UInt64, count: Int)
        /// Hand `count` bytes of the read-ahead to the session.
        case write(count: Int)
        /// Every byte went: close the stream and wait for the verdict.
        case close
        /// Done: the phase says how.
        case done
    }

    /// The next step, given the stream's `credit`, whether the link's backlog is over its
    /// window, and the bytes read ahead and not yet written.
    public func next(credit: Int, backlogFull: Bool, readAhead: Int) -> Step {
        switch phase {
        case .offered, .awaitingVerdict: return .wait
        case .finished, .refused: return .done
        case .sending:
            guard sent < size else { return .close }
            if credit <= 0 || backlogFull { return .wait }
            if readAhead <= 0 { return .read(offset: sent, count: Int(min(UInt64(Self.readChunk), size - sent))) }
            return .write(count: min(credit, Self.writePiece, readAhead, Int(clamping: size - sent)))
        }
    }

    /// `count` bytes were handed to the session. Returns whether a progress report is due
    /// (every 256 KiB, and at the last byte).
    public mutating func wrote(_ count: Int) -> Bool {
        guard phase == .sending else { return false }
        sent = min(sent + UInt64(max(count, 0)), size)
        guard sent - lastReported >= IncomingResource.progressStep || (sent == size && lastReported != size) else { return false }
        lastReported = sent
        return true
    }

    /// The stream was closed after the last byte.
    public mutating func closed() {
        guard phase == .sending, sent == size else { return }
        phase = .awaitingVerdict
    }
}
