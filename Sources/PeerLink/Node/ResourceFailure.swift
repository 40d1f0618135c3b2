/// Why a resource or a byte stream failed (`PeerLinkError.resourceFailed`).
public enum ResourceFailure: Equatable, Sendable, CustomStringConvertible {
    /// The SHA-256 of the bytes received for `name` differs from the sender's; the receiver
    /// discarded them. `direction` says which side this node was: the receiver found the
    /// mismatch, the sender was told of it.
    case digestMismatch(name: String, direction: ResourceProgress.Direction)
    /// The receiver cancelled the resource `name` after accepting it, or the stream (nil).
    case cancelledByReceiver(name: String?)
    /// The sender cancelled the stream before its end.
    case cancelledBySender
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

    /// What went wrong, as `peerlink` prints it after "transfer failed: ".
    public var description: String {
        switch self {
        case let .digestMismatch(name, .receiving):
            return "SHA-256 mismatch: the received bytes of '\(name)' differ from the sender's file; discarded"
        case let .digestMismatch(name, .sending): return "the receiver's SHA-256 check of '\(name)' failed"
        case let .cancelledByReceiver(name?): return "the receiver cancelled '\(name)'"
        case .cancelledByReceiver(nil): return "the receiver cancelled the stream"
        case .cancelledBySender: return "stream cancelled by the sender"
        case let .incomplete(received, size): return "ended after \(received) of \(size) bytes"
        case let .streamClosed(id): return "stream \(id) is closed"
        case let .noPendingOffer(name): return "no pending offer '\(name)'"
        case let .reservedStreamName(prefix): return "stream names starting with '\(prefix)' are PeerLink's own; choose another"
        case let .noDigest(name): return "'\(name)' has no digest to send"
        }
    }
}
