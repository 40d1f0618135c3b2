import PeerLinkWire

/// The sender's side of one resource (PROTOCOL §9.6–9.9), from its offer to the receiver's
/// verdict: what the receiver answered, how far the bytes went, and what the sending loop does
/// next. The loop feeds it the receiver's answers and the state of the link (credit, a full
/// backlog, the bytes it has read ahead) and carries out the step it is given.
///
/// A keyed resource (`digestFollows`, PROTOCOL §11.7) is hashed as it is read: every byte
/// from 0 goes through the hasher once, in order. On a resume from `start` the bytes before
/// it are read for the hasher alone (`skim`), and after the last byte the digest is sent
/// before the close.
package struct OutgoingResource: Sendable, Equatable {
    /// Bytes read from the file at once (ahead of the credit).
    package static let readChunk = 1 << 20
    /// Bytes read at once for the hasher alone (a resumed keyed resource's prefix).
    package static let skimChunk = 4 << 20
    /// Most bytes handed to the session at once.
    package static let writePiece = 64 * 1024

    package enum Phase: Sendable, Equatable {
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

    package let size: UInt64
    package private(set) var phase: Phase = .offered
    /// Where the receiver asked the bytes to start (its part file's length, for a resume).
    package private(set) var start: UInt64 = 0
    /// Bytes handed to the session, counting from the file's start.
    package private(set) var sent: UInt64 = 0
    /// Whether the receiver accepted before anything else happened (a refusal after it is a cancel).
    package private(set) var wasAccepted = false
    /// Whether the SHA-256 goes after the last byte (a keyed offer) instead of in the offer.
    package let digestFollows: Bool
    /// Bytes before `start` read for the hasher alone (a keyed resource's resumed prefix).
    package private(set) var skimmed: UInt64 = 0
    /// Whether the digest of a keyed resource went out.
    package private(set) var digestSent = false
    private var lastReported: UInt64 = 0

    package init(size: UInt64, digestFollows: Bool = false) {
        self.size = size
        self.digestFollows = digestFollows
    }

    /// The receiver accepted from `offset` (clamped to the size). Ignored unless offered.
    package mutating func accepted(offset: UInt64) {
        guard phase == .offered else { return }
        start = min(offset, size)
        sent = start
        lastReported = start
        wasAccepted = true
        phase = .sending
    }

    /// The receiver's verdict. Ignored unless every byte went.
    package mutating func verdict(ok: Bool) {
        guard phase == .awaitingVerdict else { return }
        phase = .finished(ok: ok)
    }

    /// The receiver refused or cancelled: final, whatever came before, unless a verdict came.
    package mutating func refused(_ reason: ResourceError?) {
        if case .finished = phase { return }
        phase = .refused(reason)
    }

    /// What the sending loop does next.
    package enum Step: Sendable, Equatable {
        /// Wait for the receiver or for the link.
        case wait
        /// Read `count` bytes of the file at `offset` (nothing is left in the read-ahead).
        case read(offset: UInt64, count: Int)
        /// Hand `count` bytes of the read-ahead to the session.
        case write(count: Int)
        /// Read `count` bytes at `offset` for the hasher only: they are not sent (the receiver
        /// holds them), but the digest covers them.
        case skim(offset: UInt64, count: Int)
        /// Every byte went: send the digest of all of them (a keyed resource).
        case sendDigest
        /// Every byte went (and the digest, when it follows): close the stream and wait for
        /// the verdict.
        case close
        /// Done: the phase says how.
        case done
    }

    /// The next step, given the stream's `credit`, whether the link's backlog is over its
    /// window, and the bytes read ahead and not yet written.
    package func next(credit: Int, backlogFull: Bool, readAhead: Int) -> Step {
        switch phase {
        case .offered, .awaitingVerdict: return .wait
        case .finished, .refused: return .done
        case .sending:
            // The hasher takes the bytes in order: a resumed prefix before any byte after it.
            if digestFollows, skimmed < start { return .skim(offset: skimmed, count: Int(min(UInt64(Self.skimChunk), start - skimmed))) }
            guard sent < size else { return digestFollows && !digestSent ? .sendDigest : .close }
            if credit <= 0 || backlogFull { return .wait }
            if readAhead <= 0 { return .read(offset: sent, count: Int(min(UInt64(Self.readChunk), size - sent))) }
            return .write(count: min(credit, Self.writePiece, readAhead, Int(clamping: size - sent)))
        }
    }

    /// `count` bytes were handed to the session. Returns whether a progress report is due
    /// (every 256 KiB, and at the last byte).
    package mutating func wrote(_ count: Int) -> Bool {
        guard phase == .sending else { return false }
        sent = min(sent + UInt64(max(count, 0)), size)
        guard sent - lastReported >= IncomingResource.progressStep || (sent == size && lastReported != size) else { return false }
        lastReported = sent
        return true
    }

    /// `count` bytes of the resumed prefix went through the hasher.
    package mutating func skimmed(_ count: Int) {
        guard phase == .sending else { return }
        skimmed = min(skimmed + UInt64(max(count, 0)), start)
    }

    /// The digest went out after the last byte.
    package mutating func sentDigest() {
        guard phase == .sending, digestFollows, sent == size else { return }
        digestSent = true
    }

    /// The stream was closed after the last byte (and the digest, when it follows).
    package mutating func closed() {
        guard phase == .sending, sent == size, !digestFollows || digestSent else { return }
        phase = .awaitingVerdict
    }
}
