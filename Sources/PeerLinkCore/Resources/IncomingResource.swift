import PeerLinkWire

/// The receiver's account of one resource (PROTOCOL §9.6–9.9) between its acceptance and its
/// verdict: what the sender announced, what arrived, what the writer still holds, and when
/// the application is due a progress report. Bytes are counted twice over on purpose: taken
/// (arrived, handed to the writer) and written (the writer's completion came back). The
/// writer's completions may come back in any order, so each one counts what it wrote, never a
/// running total.
package struct IncomingResource: Sendable, Equatable {
    /// Bytes between two progress reports.
    package static let progressStep: UInt64 = 256 * 1024

    /// Bytes the sender announced in its offer.
    package let size: UInt64
    /// Bytes the part file already held when this run accepted (a resume).
    package let resumedFrom: UInt64
    /// Bytes in the part file: written and hashed.
    package private(set) var received: UInt64
    /// Bytes handed to the writer whose completion has not come back yet.
    package private(set) var queued: UInt64 = 0
    /// The SHA-256 the whole content must have: from the offer, or for a keyed offer from the
    /// RESOURCE_DIGEST after the last byte (nil until it came).
    package private(set) var sha256: [UInt8]?
    /// Whether the digest follows the bytes (a keyed offer).
    package let digestFollows: Bool
    private var lastReported: UInt64

    /// `sha256` is the offer's digest, nil for a keyed offer (its digest follows the bytes).
    package init(size: UInt64, resumedFrom: UInt64, sha256: [UInt8]? = nil) {
        self.size = size
        self.sha256 = sha256
        self.digestFollows = sha256 == nil
        self.resumedFrom = min(resumedFrom, size)
        self.received = self.resumedFrom
        self.lastReported = self.resumedFrom
    }

    /// What to do with bytes that arrived.
    package enum Take: Equatable, Sendable {
        /// Hand them to the writer.
        case write
        /// The sender sent more than it announced: stop the resource, keep what is written.
        case overrun(announced: UInt64)
    }

    /// Counts `count` arrived bytes as handed to the writer, unless they would run past the
    /// announced size (then nothing is counted).
    package mutating func take(_ count: Int) -> Take {
        let n = UInt64(max(count, 0))
        guard received + queued + n <= size else { return .overrun(announced: size) }
        queued += n
        return .write
    }

    /// The writer's completion for `count` bytes it wrote. Returns whether the application is
    /// due a progress report (every `progressStep` bytes, and at the last byte).
    package mutating func wrote(_ count: Int) -> Bool {
        let n = min(UInt64(max(count, 0)), queued)
        queued -= n
        received += n
        guard received - lastReported >= Self.progressStep || (received == size && lastReported != size) else { return false }
        lastReported = received
        return true
    }

    /// The writer stopped (disk full, write error) holding `held` bytes: those stay for a resume
    /// and nothing queued will complete.
    package mutating func stopped(holding held: UInt64) {
        received = min(held, size)
        queued = 0
    }

    /// What to do with a RESOURCE_DIGEST.
    package enum DigestTake: Equatable, Sendable {
        /// Keep it: the content is checked against it at the end.
        case expected
        /// Not allowed here: stop the resource (the reason says why), keep what is written.
        case unexpected(String)
    }

    /// A RESOURCE_DIGEST arrived. Only a keyed offer takes one, once, after its last byte
    /// (a byte after it would not be covered by what the sender hashed).
    package mutating func digestArrived(_ digest: [UInt8]) -> DigestTake {
        guard digestFollows else { return .unexpected("the sender sent a SHA-256 after an offer that carried one") }
        guard sha256 == nil else { return .unexpected("the sender sent the SHA-256 twice") }
        guard received + queued == size else {
            return .unexpected("the sender sent the SHA-256 after \(received + queued) of \(size) bytes")
        }
        guard digest.count == 32 else { return .unexpected("the SHA-256 is not 32 bytes") }
        sha256 = digest
        return .expected
    }

    /// What the writer checks the whole content against once the sender closed the stream,
    /// or why it cannot check (a keyed resource whose digest never came: nothing lands).
    package var expectedDigest: Result<[UInt8], VerifyFailure> {
        sha256.map { .success($0) } ?? .failure(.noDigest)
    }

    /// Why the content cannot be checked.
    package enum VerifyFailure: Error, Equatable, Sendable, CustomStringConvertible {
        case noDigest
        package var description: String { "the sender ended the transfer without its SHA-256: nothing was checked or kept as a file (the partial file is kept to resume)" }
    }

    /// Every announced byte is written.
    package var isComplete: Bool { received == size && queued == 0 }

    /// Why the receiver stops after its writer failed holding `held` bytes (told to the sender
    /// as RESOURCE_ERROR).
    package func failure(diskFull: Bool, held: UInt64, reason: String) -> ResourceError {
        diskFull ? .diskFull(held: held, size: size) : .writeFailed(held: held, size: size, reason: reason)
    }
}
