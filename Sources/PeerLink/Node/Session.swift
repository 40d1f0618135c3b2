import Foundation
import Synchronization
import PeerLinkCore
import PeerLinkWire

/// A group of connected peers exchanging messages, resources and streams.
///
/// Peers join through invitations (`Browser.invite`, `Invitation.accept`). Each remote peer
/// is served by one channel that may own several links; the session sees one peer ID per
/// peer whatever the links. Observe `events` for state changes and incoming data.
public final class Session: Sendable {
    /// What happens in a session.
    public enum Event: Sendable {
        /// The peer's state in this session changed.
        case peerStateChanged(PeerID, displayName: String, state: PeerState)
        /// A message arrived from the peer, sent with `mode`.
        case message(from: PeerID, bytes: [UInt8], mode: SendMode)
        /// A peer offers a file; call `accept(_:into:)` or `decline(_:)`.
        case resourceOffered(ResourceOffer)
        /// Bytes of a resource were hashed, verified or transferred, in either direction.
        case resourceProgress(ResourceProgress)
        /// A resource finished in either direction: `path` is where a received file now is, or
        /// `error` says why it failed.
        case resourceFinished(ResourceProgress, path: String?, error: ResourceFailure?)
        /// The peer opened a byte stream to this node; read it to the end or cancel it.
        case streamOpened(IncomingStream)
        /// A link to a peer came up or went away, and why.
        case linkChanged(PeerID, link: LinkID, medium: Medium, up: Bool, reason: LinkChangeReason)
        /// `role`'s traffic to the peer now goes over `link`, for `reason` (the policy's
        /// choice, or a fallback while the chosen link is silent).
        case carrierChanged(PeerID, link: LinkID, role: LinkRole, reason: CarrierReason)
        /// A keepalive measured a link's round trip (whole milliseconds).
        case roundTrip(PeerID, link: LinkID, rtt: Duration)
        /// The link manager could not add a link on one of the peer's paths (`failure` says
        /// why); it tries again after `retryIn`.
        case linkAttemptFailed(PeerID, endpoint: TransportEndpoint, failure: DialFailure, retryIn: Duration)
        /// A step of negotiating a set-up medium (Wi-Fi Direct) with the peer: proposed,
        /// accepted, group formed, link up, refused, failed, torn down; with durations and why.
        case linkUpgrade(PeerID, UpgradeEvent)
    }

    /// The node whose links the session uses.
    public let node: Node
    /// Timing and sizing of the session's channels (keepalives, windows, fragment sizes).
    public let config: SessionConfig
    /// Which of a peer's links carries its traffic (see LinkPolicy).
    public let policy: LinkPolicy
    /// Everything that happens in the session, in order. Nothing is dropped: while more than
    /// `maxUnreadEvents` are waiting to be read, the session stops acknowledging reliable
    /// data, so senders pause instead of this buffer growing without bound. One reader.
    public let events: Events
    /// Unread events above which senders are paused.
    public let maxUnreadEvents: Int
    let queue = EventBroadcast<Event>()
    /// Invitations accepted into this session whose link is still joining.
    let joining = PendingCount()
    let registry = ChannelRegistry()
    /// Bytes on the wire of every link that joined this session, per medium.
    let wire = SessionWireBytes()
    private let managers = ManagerRegistry()
    /// Whether this session has asked the node's upgraders to stand by (and owes them a
    /// `standDown()`).
    private let standing = StandingBy()

    /// Creates an empty session for `node`.
    public init(node: Node, config: SessionConfig = SessionConfig(), policy: LinkPolicy = LinkPolicy(),
                maxUnreadEvents: Int = 4096) {
        self.node = node
        self.policy = policy
        self.config = config
        self.maxUnreadEvents = maxUnreadEvents
        self.events = Events(queue: queue)
        standBy()
    }

    deinit {
        // Dropped without `disconnect()`: what standing by set up is still undone.
        guard standing.end() else { return }
        let upgraders = node.plugins
        Task { for u in upgraders { await u.standDown() } }
    }

    /// Asks the node's upgraders to get ready (a Wi-Fi radio put under wpa_supplicant), so
    /// that a negotiation started later does not wait for it; once until `disconnect()`.
    private func standBy() {
        guard standing.begin() else { return }
        for u in node.plugins { u.standBy() }
    }

    /// The session's events; reading one lets the session acknowledge more data.
    ///
    /// Several tasks may each iterate it: every iteration (each `for await` loop) gets every
    /// event from the moment it starts, in order. Events that arrive while nobody iterates
    /// wait for the next iteration to start; none is dropped. The slowest iteration sets the
    /// pace: while it is more than `maxUnreadEvents` behind, reliable data is not acknowledged.
    public struct Events: AsyncSequence, Sendable {
        public typealias Element = Event
        let queue: EventBroadcast<Event>

        /// One iteration's place in the events. Ends (returns nil) only when the reading task
        /// is cancelled.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let reader: Reader
            public mutating func next() async -> Event? { await reader.queue.next(reader.id) }
        }

        /// Holds an iteration's subscription; dropping the iterator lets its unread events go.
        final class Reader: Sendable {
            let queue: EventBroadcast<Event>
            let id: UInt64
            init(_ queue: EventBroadcast<Event>) { self.queue = queue; id = queue.subscribe() }
            deinit { queue.unsubscribe(id) }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reader: Reader(queue)) }
    }

    /// Whether readers are behind (used by channels to pause acknowledgements).
    var readerIsBehind: Bool { queue.unread > maxUnreadEvents }

    /// Peers with at least one live link.
    public func connectedPeers() async -> [PeerID] {
        var out: [PeerID] = []
        for c in registry.all() where await c.state == .connected { out.append(c.peer) }
        return out.sorted()
    }

    /// Sends a message to several peers. Reliable messages wait while a peer's send backlog
    /// is full (flow control). Throws if a peer is not connected.
    public func send(_ bytes: [UInt8], to peers: [PeerID], mode: SendMode = .reliable) async throws {
        for p in peers {
            guard let c = registry.channel(for: p) else { throw PeerLinkError.notConnected(p) }
            try await c.send(bytes, mode: mode)
        }
    }

    /// Sends a file and returns once the receiver has verified its SHA-256. If the receiver
    /// holds part of the same file from an interrupted transfer, only the rest is sent.
    /// Cancelling the calling task cancels the transfer (the receiver keeps what it has).
    public func sendResource(at path: String, name: String? = nil, to peer: PeerID,
                             progress: (@Sendable (ResourceProgress) -> Void)? = nil) async throws {
        guard let c = registry.channel(for: peer) else { throw PeerLinkError.notConnected(peer) }
        try await c.sendResource(path: path, name: name ?? (path as NSString).lastPathComponent, progress: progress)
    }

    /// Reads and hashes the file at `path` now, so that a later `sendResource(at:)` of the same
    /// unchanged file makes its offer at once: when sending several files one after another,
    /// prepare the next while the current one travels. A send that starts while this is still
    /// hashing waits for the same pass. Throws what `sendResource` would for an unreadable file.
    public func prepareToSend(fileAt path: String) async throws {
        _ = try await FileDigest.sha256(ofFileAt: path)
    }

    /// Free space a receiver leaves untouched by default (`accept(_:into:keepingFree:)`).
    public static let defaultKeepFree: UInt64 = 64 << 20

    /// Accepts an offered resource into `directory` (created if missing). When the bytes still
    /// to come do not fit in the directory's free space less `keepingFree`, the offer is
    /// refused instead: this throws `PeerLinkError.resourceRefused` and the sender is told the
    /// same reason.
    public func accept(_ offer: ResourceOffer, into directory: String, keepingFree: UInt64 = Session.defaultKeepFree) async throws {
        guard let c = registry.channel(for: offer.peer) else { throw PeerLinkError.notConnected(offer.peer) }
        try await c.acceptResource(offer, directory: directory, keepFree: keepingFree)
    }

    /// The space check `accept(_:into:keepingFree:)` makes, for `size` bytes with this SHA-256
    /// that would be received into `directory` now: nil when they fit, else the refusal the
    /// sender would be told. Bytes a partial file of the same content already holds there
    /// count as written; bytes transfers accepted earlier will still write count as used. For
    /// a receiver that answers before any offer comes (a daemon told of an item first).
    public static func spaceRefusal(forReceiving size: UInt64, sha256: [UInt8], into directory: String,
                                    keepingFree: UInt64) -> ResourceError? {
        let part = ResourceHandler.partialPath(in: directory, sha256: sha256)
        var st = stat()
        let held = stat(part, &st) == 0 && UInt64(st.st_size) <= size ? UInt64(st.st_size) : 0
        // The folder may not exist yet: its nearest existing parent is on the same file system.
        var at = (part as NSString).deletingLastPathComponent
        while !FileManager.default.fileExists(atPath: at), at != "/", !at.isEmpty { at = (at as NSString).deletingLastPathComponent }
        if case let .refuse(reason) = ResourceHandler.admission(size: size, held: held, at: at, keepFree: keepingFree) { return reason }
        return nil
    }

    /// Stops receiving a resource, before or during the transfer. The partial file is kept,
    /// so the sender can resume later; the sender's `sendResource` fails.
    public func cancel(_ offer: ResourceOffer) async {
        await registry.channel(for: offer.peer)?.cancelIncoming(offer)
    }

    /// Declines an offered resource; the sender's `sendResource` fails with `resourceDeclined`.
    /// Does nothing when the peer is no longer connected.
    public func decline(_ offer: ResourceOffer) async {
        await registry.channel(for: offer.peer)?.declineResource(offer)
    }

    /// Opens an outgoing byte stream to a peer. Names starting with `peerlink/` belong to
    /// PeerLink's own services and are refused.
    public func openStream(name: String, to peer: PeerID) async throws -> OutgoingStream {
        guard !NodeServices.isReserved(name) else {
            throw PeerLinkError.resourceFailed(.reservedStreamName(prefix: NodeServices.reservedPrefix))
        }
        return try await openServiceStream(name: name, to: peer)
    }

    /// Opens a stream of a node service (its name may be reserved).
    package func openServiceStream(name: String, to peer: PeerID) async throws -> OutgoingStream {
        guard let c = registry.channel(for: peer) else { throw PeerLinkError.notConnected(peer) }
        return try await c.openStream(name: name)
    }

    /// Link details of every peer, for `peerlink links`.
    public func links() async -> [PeerLinks] {
        var out: [PeerLinks] = []
        for c in registry.all() { out.append(await c.snapshot()) }
        return out
    }

    /// Bytes on the wire per medium of every link that joined this session: live links' counts
    /// plus what ended links had moved. Never smaller than an earlier answer.
    public func wireBytes() -> [Medium: WireBytes] { wire.perMedium }

    /// Leaves the session gracefully: peers are told, then links close. Peers whose
    /// invitation was accepted into it and are still joining are waited for and left too.
    public func disconnect() async {
        await joining.wait()
        for c in registry.all() { await c.leave() }
        if standing.end() {
            for u in node.plugins { node.pendingTeardowns.start { await u.standDown() } }
        }
        // Groups set up for this node's sessions are taken down before this returns: a
        // process that exits next must not leave one up on the radio.
        await node.pendingTeardowns.wait()
    }

    /// Leaves the session with one peer.
    public func disconnect(_ peer: PeerID) async {
        await registry.channel(for: peer)?.leave()
    }

    /// Tells the session about a peer's current discovery record: the link manager adds links
    /// on paths that appeared (e.g. Wi-Fi found during a Bluetooth session). Both sides keep
    /// links up: a peer that invited this one gets a link manager here as soon as its record
    /// is known, and redials its paths too.
    public func update(_ peer: PeerInfo) async {
        if let m = managers.existing(peer.peerID) { return await m.update(peer) }
        guard let channel = registry.channel(for: peer.peerID), await channel.isAlive else { return }
        let live = await channel.linkPathKeys()
        await manager(for: peer.peerID).adopt(node: node, info: peer, live: live)
    }

    /// Feeds every found or updated record of `browser` to `update(_:)`, in the order the
    /// browser saw them (a task per record could apply an older record after a newer one).
    public func follow(_ browser: Browser) {
        let (records, feed) = AsyncStream.makeStream(of: PeerInfo.self, bufferingPolicy: .unbounded)
        Task { [weak self] in
            for await p in records {
                guard let self else { return }
                await self.update(p)
            }
        }
        browser.addObserver { event in
            switch event {
            case let .found(p), let .updated(p): feed.yield(p)
            default: break
            }
        }
    }

    /// The link manager of a peer this session invited.
    func manager(for peer: PeerID) -> LinkManager { managers.get(peer, session: self) }

    /// A link of `peer` went down: its link manager dials the path again (no polling).
    func linkDown(_ peer: PeerID, _ link: LinkID) {
        guard let m = managers.existing(peer) else { return }
        Task { await m.linkDown(link) }
    }
    /// How many peers have a link manager (tests: none once every peer left).
    var linkManagerCount: Int { managers.count }

    /// Waits until the peer has a channel (joined through the other side's invitation).
    func waitForChannel(_ peer: PeerID, timeout: Double) async -> Bool {
        let deadline = Runtime.seconds() + timeout
        while Runtime.seconds() < deadline {
            if registry.channel(for: peer) != nil { return true }
            try? await Runtime.sleep(nanoseconds: 20_000_000)
        }
        return registry.channel(for: peer) != nil
    }

    /// Adds an authenticated, invited link: joins the peer's channel when the link belongs to
    /// the same incarnation of both nodes, otherwise starts a fresh channel. Returns the link's id.
    @discardableResult
    func attach(_ link: SecureLink, initiator: Bool) async -> LinkID {
        await node.remember(self)
        standBy()  // again, after a disconnect
        let token = link.remoteHello.sessionToken
        if let existing = registry.channel(for: link.remotePeer) {
            if existing.remoteToken == token, await existing.isAlive {
                await existing.add(link)
                return link.id
            }
            await existing.leave(reason: .duplicateLink, text: "replaced by a new session with the same peer")
        }
        let channel = PeerChannel(session: self, peer: link.remotePeer, displayName: link.remoteHello.displayName,
                                  remoteToken: token, initiator: initiator, config: config)
        registry.set(channel, for: link.remotePeer)
        await channel.add(link)
        return link.id
    }

    func channelEnded(_ channel: PeerChannel) {
        registry.remove(channel)
        if registry.channel(for: channel.peer) == nil, let m = managers.remove(channel.peer) { Task { await m.stop() } }
    }

    func emit(_ e: Event) { queue.push(e) }
}

/// Whether a session stands by: `begin` and `end` each return true when they change it.
final class StandingBy: Sendable {
    private let on = Mutex(false)
    func begin() -> Bool { on.withLock { o in defer { o = true }; return !o } }
    func end() -> Bool { on.withLock { o in defer { o = false }; return o } }
}

/// The channels of a session, by peer.
final class ChannelRegistry: Sendable {
    private let channels = Mutex<[PeerID: PeerChannel]>([:])
    func channel(for p: PeerID) -> PeerChannel? { channels.withLock { $0[p] } }
    func set(_ c: PeerChannel, for p: PeerID) { channels.withLock { $0[p] = c } }
    func remove(_ c: PeerChannel) { channels.withLock { if $0[c.peer] === c { $0[c.peer] = nil } } }
    func all() -> [PeerChannel] { channels.withLock { Array($0.values) } }
}

/// The link managers of a session, by peer.
final class ManagerRegistry: Sendable {
    private let managers = Mutex<[PeerID: LinkManager]>([:])
    func get(_ p: PeerID, session: Session) -> LinkManager {
        managers.withLock { m in
            if let existing = m[p] { return existing }
            let made = LinkManager(peer: p, session: session)
            m[p] = made
            return made
        }
    }
    func existing(_ p: PeerID) -> LinkManager? { managers.withLock { $0[p] } }
    func remove(_ p: PeerID) -> LinkManager? { managers.withLock { $0.removeValue(forKey: p) } }
    var count: Int { managers.withLock { $0.count } }
}

/// One link as `peerlink links` shows it.
public struct LinkSnapshot: Sendable {
    /// The link's number, unique within this process.
    public var id: LinkID
    /// The medium the link runs over.
    public var medium: Medium
    /// The remote address, as the transport describes it.
    public var remote: String
    /// Where unreliable messages of this link go when they fit a datagram ("udp://host:port").
    public var datagram: String?
    /// What crossed that UDP path so far (nil without one).
    public var datagrams: DatagramCounts?
    /// Bytes the link moved on its connection so far (nil in an older daemon's report).
    public var wire: WireBytes?
    /// The latest measured round trip (whole milliseconds); nil until one was measured.
    public var rtt: Duration? {
        get { rttMillis.map { .milliseconds(clamping: $0) } }
        set { rttMillis = newValue?.wholeMilliseconds }
    }
    /// `rtt` as the JSON of `peerlink links` and the daemon's API carry it.
    package var rttMillis: UInt64?
    /// Fraction of recent keepalive probes not answered in time.
    public var loss: Double
    /// Estimated capacity in bytes per second, once the link carried data.
    public var throughput: Double?
    /// "up", or "suspected" while silent with data in flight.
    public var state: String
    /// The roles (control, reliable, bulk, unreliable) this link carries now, and
    /// "reliable-copy" while it gets copies of the reliable messages (`LinkPolicy.copyMessages`).
    public var carries: [String]
    /// Why this link carries each of its roles.
    public var reasons: [LinkRole: CarrierReason]
    /// Why the link gets copies of the reliable messages, while it does ("reliable-copy" in
    /// `carries`).
    public var messageCopyReason: CarrierReason? = nil
    /// One line: the reasons, or why the link is on standby.
    public var reason: String
}

extension LinkSnapshot: Codable {
    private enum CodingKeys: String, CodingKey {
        case id, medium, remote, datagram, datagrams, wire, rttMillis, loss, throughput, state, carries, reasons, reason
    }

    /// Reads a link as `peerlink links --json` and the daemon's API write it: reasons are text
    /// keyed by role name ("reliable-copy" for the message copy).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(LinkID.self, forKey: .id)
        medium = try c.decode(Medium.self, forKey: .medium)
        remote = try c.decode(String.self, forKey: .remote)
        datagram = try c.decodeIfPresent(String.self, forKey: .datagram)
        datagrams = try c.decodeIfPresent(DatagramCounts.self, forKey: .datagrams)
        wire = try c.decodeIfPresent(WireBytes.self, forKey: .wire)
        rttMillis = try c.decodeIfPresent(UInt64.self, forKey: .rttMillis)
        loss = try c.decode(Double.self, forKey: .loss)
        throughput = try c.decodeIfPresent(Double.self, forKey: .throughput)
        state = try c.decode(String.self, forKey: .state)
        carries = try c.decode([String].self, forKey: .carries)
        var byRole: [LinkRole: CarrierReason] = [:]
        for (name, why) in try c.decode([String: CarrierReason].self, forKey: .reasons) {
            if let role = LinkRole(rawValue: name) { byRole[role] = why } else if name == Self.copyRole { messageCopyReason = why }
        }
        reasons = byRole
        reason = try c.decode(String.self, forKey: .reason)
    }

    /// Writes the link in the form `init(from:)` reads.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(medium, forKey: .medium)
        try c.encode(remote, forKey: .remote)
        try c.encodeIfPresent(datagram, forKey: .datagram)
        try c.encodeIfPresent(datagrams, forKey: .datagrams)
        try c.encodeIfPresent(wire, forKey: .wire)
        try c.encodeIfPresent(rttMillis, forKey: .rttMillis)
        try c.encode(loss, forKey: .loss)
        try c.encodeIfPresent(throughput, forKey: .throughput)
        try c.encode(state, forKey: .state)
        try c.encode(carries, forKey: .carries)
        var byName = Dictionary(uniqueKeysWithValues: reasons.map { ($0.key.rawValue, $0.value) })
        if let messageCopyReason { byName[Self.copyRole] = messageCopyReason }
        try c.encode(byName, forKey: .reasons)
        try c.encode(reason, forKey: .reason)
    }

    /// The name `carries` and the JSON give the message copy's role.
    static let copyRole = "reliable-copy"
}

/// A peer's links.
public struct PeerLinks: Sendable, Codable {
    /// The peer.
    public var peer: PeerID
    /// The name the peer announced in its hello.
    public var displayName: String
    /// The peer's state in the session.
    public var state: PeerState
    /// Every link of the peer's channel.
    public var links: [LinkSnapshot]
    /// The latest steps of negotiated links (Wi-Fi Direct) with this peer, oldest first.
    public var upgrades: [UpgradeRecord] = []
}

extension PeerLinks {
    /// Reads a peer's links from JSON; a negotiation step this version does not know (a newer
    /// daemon's) is left out rather than failing the whole report.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        peer = try c.decode(PeerID.self, forKey: .peer)
        displayName = try c.decode(String.self, forKey: .displayName)
        state = try c.decode(PeerState.self, forKey: .state)
        links = try c.decode([LinkSnapshot].self, forKey: .links)
        upgrades = try c.decodeIfPresent([IfReadable<UpgradeRecord>].self, forKey: .upgrades)?.compactMap(\.value) ?? []
    }
}

/// An element of a JSON array that is kept when it decodes and dropped (nil) when it does not.
private struct IfReadable<Value: Decodable>: Decodable {
    let value: Value?
    init(from decoder: Decoder) throws { value = try? Value(from: decoder) }
}

/// One step of a link negotiation as `peerlink links` shows it.
public struct UpgradeRecord: Sendable, Codable, Equatable {
    /// When the step happened.
    public var time: Date {
        get { Date(timeIntervalSince1970: seconds) }
        set { seconds = newValue.timeIntervalSince1970 }
    }
    /// `time` as the JSON of `peerlink links` and the daemon's API carry it: seconds since 1970.
    package var seconds: Double
    /// The negotiation's ID, chosen by the side that proposed it.
    public var id: UInt32
    /// The negotiated medium's name (e.g. "wifi-direct").
    public var medium: String
    /// The step: proposed, received-proposal, accepted, … (its raw value is the name the JSON
    /// carries).
    public var step: UpgradeEvent.Step
    /// How long the step took (since the previous one; whole milliseconds).
    public var sinceLastStep: Duration {
        get { .milliseconds(clamping: stepMillis) }
        set { stepMillis = newValue.wholeMilliseconds }
    }
    /// Time since the proposal (whole milliseconds).
    public var sinceProposal: Duration {
        get { .milliseconds(clamping: sinceProposalMillis) }
        set { sinceProposalMillis = newValue.wholeMilliseconds }
    }
    // The two as the JSON of `peerlink links` and the daemon's API carry them.
    package var stepMillis: UInt64
    package var sinceProposalMillis: UInt64
    /// Why (refusals, failures, teardowns) or what was decided; may be empty.
    public var detail: String

    private enum CodingKeys: String, CodingKey {
        case seconds = "time", id, medium, step, stepMillis, sinceProposalMillis, detail
    }

    init(_ e: UpgradeEvent, at seconds: Double) {
        self.seconds = seconds
        id = e.id; medium = e.medium; step = e.step
        stepMillis = e.sinceLastStep.wholeMilliseconds; sinceProposalMillis = e.sinceProposal.wholeMilliseconds; detail = e.detail
    }
}

extension Session {
    /// The fragment sizes (messages; stream and resource bytes) of the session's channel to
    /// `peer`, nil when not connected (tests).
    func fragmentSizes(for peer: PeerID) async -> (messages: Int, bulk: Int)? {
        await registry.channel(for: peer)?.fragmentSizes
    }

    /// Every channel's state, for diagnosing a transfer that does not progress (tests, logs).
    func debugState() async -> String {
        var lines: [String] = ["unread events: \(queue.unread) (readers: \(queue.readerCount))"]
        for c in registry.all() { lines.append(await c.debugState()) }
        return lines.joined(separator: "\n")
    }
}
