#if canImport(Glibc)
import Glibc
#endif

/// Why one attempt to reach a peer (or to learn who a device is) failed: the endpoint tried,
/// a reason to switch on, and the transport's or the handshake's own error, which says more
/// (the OS's message, a Bluetooth hint).
///
/// ```swift
/// catch let PeerLinkError.unreachable(_, failures) {
///     if failures.contains(where: { $0.reason == .refused }) { … }
/// }
/// ```
public struct DialFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, in terms a caller can act on.
    public enum Reason: Equatable, Sendable, CustomStringConvertible {
        /// This node has no transport for the endpoint's medium.
        case noTransport(Medium)
        /// The peer has no endpoint on a medium this node has, or none the link policy allows.
        case noUsableEndpoint
        /// Nothing listens at the endpoint: the remote refused the connection.
        case refused
        /// There is no route to the endpoint: network or host unreachable, interface or
        /// address gone, Bluetooth device out of range.
        case noRoute
        /// Connecting or the secure handshake did not finish in time.
        case timedOut
        /// The secure handshake failed: another protocol version, corrupted or hostile bytes.
        case handshakeFailed
        /// The endpoint belongs to another peer than the one dialled: this one.
        case wrongPeer(PeerID)
        /// The remote's peer ID (this one) does not start with the bytes its advertisement
        /// promised.
        case wrongPrefix(PeerID)
        /// The remote closed the connection before the link was ready.
        case closedByRemote
        /// The remote sent something the protocol does not allow.
        case protocolViolation
        /// The link came up but the peer declined to let it join the session.
        case declined
        /// Another transport failure (a bad address, a failed system call); `cause` says which.
        case transport
        /// Anything else; `cause` says what.
        case other

        /// The reason in a few words (a failure's `description` prefers its cause's wording).
        public var description: String {
            switch self {
            case let .noTransport(medium): return "this node has no \(medium.rawValue) transport"
            case .noUsableEndpoint: return "no endpoint on a medium this node has (or the policy allows)"
            case .refused: return "connection refused"
            case .noRoute: return "no route to the endpoint"
            case .timedOut: return "timed out"
            case .handshakeFailed: return "secure handshake failed"
            case let .wrongPeer(actual): return "the remote is peer \(actual), not the expected peer; link closed"
            case let .wrongPrefix(actual): return "the remote is peer \(actual), whose ID does not start with the advertised bytes; link closed"
            case .closedByRemote: return "the remote closed the connection"
            case .protocolViolation: return "protocol error from the remote"
            case .declined: return "the peer declined the link"
            case .transport: return "transport failure"
            case .other: return "failed"
            }
        }
    }

    /// The error a transport or the handshake raised, kept for its wording and detail.
    public enum Cause: Equatable, Sendable, CustomStringConvertible {
        /// The transport failed (its `errno`, operation, timeout).
        case transport(TransportError)
        /// The secure link could not be set up.
        case link(LinkError)
        /// An error of another kind, as text.
        case other(String)

        /// The cause `error` is: a transport or link error as such, any other as its text.
        init(_ error: any Error) {
            switch error {
            case let e as TransportError: self = .transport(e)
            case let e as LinkError: self = .link(e)
            default: self = .other("\(error)")
            }
        }

        /// The underlying error's own wording.
        public var description: String {
            switch self {
            case let .transport(e): return e.description
            case let .link(e): return e.description
            case let .other(text): return text
            }
        }
    }

    /// The endpoint that was tried; nil when there was none to try.
    public var endpoint: TransportEndpoint?
    /// Why the attempt failed.
    public var reason: Reason
    /// The error behind `reason`, when one was raised.
    public var cause: Cause?

    /// A failure with its reason and, optionally, the error behind it.
    public init(endpoint: TransportEndpoint?, reason: Reason, cause: Cause? = nil) {
        self.endpoint = endpoint; self.reason = reason; self.cause = cause
    }

    /// The failure `error` means for an attempt on `endpoint`: a transport or link error is
    /// classified into a reason and kept as the cause; a `DialFailure` is taken as it is.
    public init(endpoint: TransportEndpoint?, error: any Error) {
        switch error {
        case let f as DialFailure:
            self = f
            self.endpoint = f.endpoint ?? endpoint
        case let e as TransportError:
            self.init(endpoint: endpoint, reason: Self.reason(for: e), cause: .transport(e))
        case let e as LinkError:
            self.init(endpoint: endpoint, reason: Self.reason(for: e), cause: .link(e))
        case PeerLinkError.invitationDeclined:
            self.init(endpoint: endpoint, reason: .declined, cause: .other("\(error)"))
        default:
            self.init(endpoint: endpoint, reason: .other, cause: .other("\(error)"))
        }
    }

    /// Why the attempt failed, without the endpoint: the cause's wording when there is one.
    public var explanation: String { cause?.description ?? reason.description }

    /// "endpoint: why", as `peerlink` prints it.
    public var description: String { endpoint.map { "\($0): \(explanation)" } ?? explanation }

    /// The reason a transport error gives.
    static func reason(for error: TransportError) -> Reason {
        switch error {
        case let .system(_, e):
            switch e {
            case ECONNREFUSED: return .refused
            case ENETUNREACH, EHOSTUNREACH, EHOSTDOWN, ENETDOWN, EADDRNOTAVAIL: return .noRoute
            case ETIMEDOUT: return .timedOut
            case ECONNRESET, EPIPE: return .closedByRemote
            default: return .transport
            }
        case .timedOut: return .timedOut
        case .pathGone: return .noRoute
        case .badAddress, .closed, .unsupported: return .transport
        }
    }

    /// The reason a link error gives.
    static func reason(for error: LinkError) -> Reason {
        switch error {
        case .handshakeFailed: return .handshakeFailed
        case let .unexpectedPeer(_, actual): return .wrongPeer(actual)
        case let .unexpectedPeerPrefix(_, actual): return .wrongPrefix(actual)
        case .protocolError: return .protocolViolation
        case .timedOut: return .timedOut
        case .closedByRemote: return .closedByRemote
        }
    }
}
