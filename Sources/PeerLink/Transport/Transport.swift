/// Where a transport can reach a peer: an IP address and port, or a Bluetooth address and
/// channel/PSM.
public struct TransportEndpoint: Hashable, Sendable, CustomStringConvertible, Codable {
    /// The medium the endpoint is on.
    public var medium: Medium
    /// A numeric IP address (`fe80::…%zone` for a link-local one), a Bluetooth device address,
    /// or an in-memory name, as the medium's `EndpointSyntax` says.
    public var host: String
    /// The TCP/UDP port, RFCOMM channel or L2CAP PSM.
    public var port: UInt16

    /// Makes an endpoint; nothing is checked until it is dialled.
    public init(medium: Medium, host: String, port: UInt16) {
        self.medium = medium; self.host = host; self.port = port
    }

    public var description: String {
        host.contains(":") && medium.traits.endpoint == .ipAddress ? "\(medium.rawValue)://[\(host)]:\(port)" : "\(medium.rawValue)://\(host):\(port)"
    }
}

/// A connected, not yet authenticated pipe that carries whole messages (Noise messages of at
/// most 65535 bytes). Stream transports add the 2-byte length prefix themselves.
public protocol MessageConnection: AnyObject, Sendable {
    /// The medium the connection runs over.
    var medium: Medium { get }
    /// The remote address, for logs and `peerlink links`.
    var remoteDescription: String { get }
    /// Queues a message for sending, in order, without blocking. A failed write closes the
    /// connection; the next `receive()` then reports it.
    func enqueue(_ message: [UInt8])
    /// The size of the big-endian length a byte-stream connection puts in front of each
    /// message (2), or 0 for media that keep message boundaries. A sender that writes the
    /// length itself builds each message once and hands it to `enqueue(prefixed:)`.
    var lengthPrefixSize: Int { get }
    /// Queues messages in order as `enqueue` does, each already starting with its length in
    /// `lengthPrefixSize` bytes (the length of what follows); they are written together
    /// where the medium allows. A wrong length closes the connection.
    func enqueue(prefixed messages: [[UInt8]])
    /// Bytes queued and not yet written.
    var queuedBytes: Int { get }
    /// Waits until everything queued so far has been written (or the connection failed).
    func flush() async
    /// The next message; nil when the remote closed cleanly.
    func receive() async throws -> [UInt8]?
    /// The next message and any others already received behind it (at most `limit`, at least
    /// one); nil when the remote closed cleanly. Under load a reader takes many messages per
    /// wake-up instead of one.
    func receiveBatch(limit: Int) async throws -> [[UInt8]]?
    /// Closes both directions; pending and future `receive()` calls end.
    func close()
    /// The remote's numeric IP address, for IP media (used to reach its UDP port).
    var remoteHost: String? { get }
    /// The largest frame this link carries best in one message (an L2CAP link's MTU less the
    /// Noise tag), announced in its hello so the peer sizes what it sends on it; nil for
    /// the protocol's largest.
    var preferredMaxFrame: Int? { get }
}

extension MessageConnection {
    public var lengthPrefixSize: Int { 0 }
    public func enqueue(prefixed messages: [[UInt8]]) {
        let skip = lengthPrefixSize
        for m in messages { enqueue(skip == 0 ? m : Array(m.dropFirst(skip))) }
    }
    public var remoteHost: String? { nil }
    public var preferredMaxFrame: Int? { nil }
    public func receiveBatch(limit: Int) async throws -> [[UInt8]]? { try await receive().map { [$0] } }
}

/// Accepts incoming connections until closed.
public protocol TransportListener: AnyObject, Sendable {
    /// The port (or channel/PSM) actually bound.
    var port: UInt16 { get }
    /// Stops accepting connections.
    func close()
}

/// One medium's way to listen and to dial. Implementations own one system API each.
public protocol Transport: Sendable {
    /// The medium this transport listens and dials on.
    var medium: Medium { get }
    /// Starts accepting; `onConnection` is called for each incoming connection.
    func listen(port: UInt16, onConnection: @escaping @Sendable (MessageConnection) -> Void) throws -> TransportListener
    /// Dials an endpoint, failing after `timeout`.
    func connect(to endpoint: TransportEndpoint, timeout: Duration) async throws -> MessageConnection
}

/// Errors of the I/O edges, with the operation and the system's reason.
public enum TransportError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A system call failed: what was attempted and the `errno` it set.
    case system(operation: String, errno: Int32)
    /// The operation did not finish within the time it was given.
    case timedOut(operation: String, after: Duration)
    /// An address that cannot be parsed or used on this medium.
    case badAddress(String)
    /// The connection or listener is closed.
    case closed
    /// This medium or machine cannot do what was asked; the text says what.
    case unsupported(String)
    /// The kernel reports the local end of the path gone (interface down, address removed).
    case pathGone(String)

    public var description: String {
        switch self {
        case let .system(op, e): return "\(op) failed: \(String(cString: strerror(e))) (errno \(e))"
        case let .timedOut(op, limit): return "\(op) timed out after \(limit.inSeconds) s"
        case let .badAddress(a): return "not a usable address: \(a)"
        case .closed: return "the connection is closed"
        case let .unsupported(what): return what
        case let .pathGone(why): return "the path is gone: \(why)"
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
