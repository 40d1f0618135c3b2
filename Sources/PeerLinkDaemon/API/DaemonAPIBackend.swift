import PeerLink
import PeerLinkStore

/// What the API asks of the daemon (the `FieldDaemon`, or a stand-in in tests).
public protocol DaemonAPIBackend: Sendable {
    /// The daemon's events, for `GET /v1/events`.
    var events: DaemonEvents { get }
    /// The node and its work now, for `GET /v1/status`.
    func apiStatus() async throws -> DaemonStatus
    /// Outbound items in one of `states`, oldest first.
    func apiItems(in states: Set<OutboundItem.State>) async throws -> [OutboundItem]
    /// Queues a file item from a checked submission, as `caller`.
    func apiSubmit(_ submission: ItemSubmission, caller: PeerCredentials) async throws(APIError) -> OutboundItem
    /// Unknown peers waiting for the owner's answer (`GET /v1/pending`), first asked first.
    func apiPending() async -> [PendingPeer]
    /// The owner's answer to a pending peer named by `peer` (ID, ID prefix or display name).
    func apiAnswerPending(_ peer: String, _ answer: PendingAnswer) async throws(APIError) -> PendingOutcome
    /// The session's link policy and each peer's links, for `GET /v1/status` (`peerlink links`).
    func apiLinks() async -> DaemonLinks
    /// The node's key and trust store, for `/v1/trust` (`peerlink trust` while a daemon runs).
    var trustStore: IdentityStore { get }
    /// The peers of the service its browser sees now, for `GET /v1/peers` (`peerlink browse`).
    func apiPeers() async -> [DaemonPeer]
}

/// A peer the daemon's browser sees, as `GET /v1/peers` lists it.
public struct DaemonPeer: Sendable, Equatable {
    /// Who it is, what it publishes and where it can be reached.
    public var info: PeerInfo
    /// It is in the daemon's session now.
    public var connected: Bool
    public init(info: PeerInfo, connected: Bool) { self.info = info; self.connected = connected }
}

/// The daemon session's links as `GET /v1/status` gives them under `links`.
public struct DaemonLinks: Sendable {
    public var policy: String
    /// Each peer's links, in the form `peerlink links --json` prints.
    public var peers: [PeerLinks]
    public init(policy: String, peers: [PeerLinks]) { self.policy = policy; self.peers = peers }
}

/// `GET /v1/status`'s answer.
public struct DaemonStatus: Sendable, Equatable {
    public struct Peer: Sendable, Equatable {
        public var peer: String
        public var name: String
        public init(peer: String, name: String) { self.peer = peer; self.name = name }
    }

    public var peer: String
    public var name: String
    public var service: String
    public var uptimeSeconds: Double
    public var peers: [Peer]
    /// Outbound items per state (every state present, 0 when none).
    public var items: [OutboundItem.State: Int]
    public var inbox: String
    public var outbox: String

    public init(peer: String, name: String, service: String, uptimeSeconds: Double, peers: [Peer],
                items: [OutboundItem.State: Int], inbox: String, outbox: String) {
        self.peer = peer; self.name = name; self.service = service; self.uptimeSeconds = uptimeSeconds
        self.peers = peers; self.items = items; self.inbox = inbox; self.outbox = outbox
    }
}

/// A file to queue, as `POST /v1/items` gave it (shape checked; the peer not yet resolved).
public struct ItemSubmission: Sendable, Equatable {
    /// Peer ID, unique ID prefix (8 or more characters) or trusted name.
    public var peer: String
    /// Absolute path of a regular file the caller may read (empty for a message).
    public var path: String
    /// A message item's bytes (1 to 65536), instead of a file.
    public var message: [UInt8]?
    public var priority: Int
    /// Seconds; nil: the daemon's `ttl`.
    public var ttlSeconds: Int?

    public init(peer: String, path: String, message: [UInt8]? = nil, priority: Int = 0, ttlSeconds: Int? = nil) {
        self.peer = peer; self.path = path; self.message = message; self.priority = priority; self.ttlSeconds = ttlSeconds
    }
}

/// An API error: the HTTP status, a stable machine-readable code and a sentence for people.
public struct APIError: Error, Equatable, Sendable, CustomStringConvertible {
    public let status: Int
    public let code: String
    public let message: String

    public init(_ status: Int, _ code: String, _ message: String) { self.status = status; self.code = code; self.message = message }

    public var description: String { "\(status) \(code): \(message)" }
    var response: HTTPResponse { .error(status, code, message) }
}
