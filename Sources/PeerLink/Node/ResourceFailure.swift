/// Why a resource or a byte stream failed (`PeerLinkError.resourceFailed`, and the `error` of
/// `Session.Event.resourceFinished`). Where a receiver keeps its partial file for a later
/// resume, the description says so.
public enum ResourceFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The SHA-256 of the bytes received for `name` differs from the sender's; the receiver
    /// discarded them. `direction` says which side this node was: the receiver found the
    /// mismatch, the sender was told of it.
    case digestMismatch(name: String, direction: ResourceProgress.Direction)
    /// The receiver cancelled the resource `name` after accepting it, or the stream (nil).
    case cancelledByReceiver(name: String?)
    /// The sender cancelled the resource `name` (its receiver keeps the partial file), or the
    /// stream (nil) before its end.
    case cancelledBySender(name: String?)
    /// The sender stopped after `received` of `size` bytes.
    case incomplete(received: UInt64, size: UInt64)
    /// The stream `id` is closed; nothing more can be written to it.
    case streamClosed(id: UInt32)
    /// No offer named `name` waits for an answer (already answered, or withdrawn).
    case noPendingOffer(name: String)
    /// Stream names with this prefix belong to PeerLink's own services.
    case reservedStreamName(prefix: String)
    /// The sender had no SHA-256 of `name` to send after its data.
    case noDigest(name: String)
    /// The sender ended a resource it offered without a SHA-256 without sending one: nothing
    /// was checked or kept under the final name.
    case endedWithoutDigest
    /// The peer left or its last link went away (`reason` is the session's own words); the
    /// partial file is kept.
    case disconnected(reason: String)
    /// The sender sent more than the `announced` size.
    case overrun(announced: UInt64)
    /// The sender's SHA-256 came at a moment it must not (twice, early…); `detail` says how.
    case unexpectedDigest(detail: String)
    /// The receiver's disk filled after `held` of `size` bytes (the partial file is kept).
    case diskFull(held: UInt64, size: UInt64)
    /// Writing the partial file failed (it is kept as far as it was written).
    case writeFailed(FileFailure)
    /// The verified file could not be put in place, or its partial file was unusable.
    case file(FileFailure)

    /// What went wrong, in the words `peerlink` prints.
    public var description: String {
        switch self {
        case let .digestMismatch(name, .receiving):
            return "SHA-256 mismatch: the received bytes of '\(name)' differ from the sender's file; discarded"
        case let .digestMismatch(name, .sending): return "the receiver's SHA-256 check of '\(name)' failed"
        case let .cancelledByReceiver(name?): return "the receiver cancelled '\(name)'"
        case .cancelledByReceiver(nil): return "the receiver cancelled the stream"
        case .cancelledBySender(name: _?): return "cancelled by the sender\(Self.kept)"
        case .cancelledBySender(nil): return "stream cancelled by the sender"
        case let .incomplete(received, size): return "ended after \(received) of \(size) bytes"
        case let .streamClosed(id): return "stream \(id) is closed"
        case let .noPendingOffer(name): return "no pending offer '\(name)'"
        case let .reservedStreamName(prefix): return "stream names starting with '\(prefix)' are PeerLink's own; choose another"
        case let .noDigest(name): return "'\(name)' has no digest to send"
        case .endedWithoutDigest:
            return "the sender ended the transfer without its SHA-256: nothing was checked or kept as a file (the partial file is kept to resume)"
        case let .disconnected(reason): return "peer disconnected (\(reason))\(Self.kept)"
        case let .overrun(announced): return "the sender sent more than the announced \(announced) bytes"
        case let .unexpectedDigest(detail): return detail + Self.kept
        case let .diskFull(held, size): return "the disk is full after \(ByteCount.text(held)) of \(ByteCount.text(size))\(Self.kept)"
        case let .writeFailed(failure): return "\(failure)\(Self.kept)"
        case let .file(failure): return failure.description
        }
    }

    private static let kept = "; the partial file is kept to resume"
}
