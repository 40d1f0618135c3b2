import Foundation
import Logging
import PeerLink
import PeerLinkStore
import PeerLinkWire

/// A field node (`peerlink daemon`): advertises, answers invitations by its `accept` rule,
/// invites the peers it holds items for when they come into range, and moves items both ways
/// with the store-and-forward service (docs/PROTOCOL.md §16) — each item delivered exactly
/// once, whatever crashes or link losses come between (the ledger, docs/STORE.md).
///
/// The daemon is an actor; the ledger's calls (an fsync each) run on the blocking pool.
public actor FieldDaemon {
    /// What the daemon runs on, made by its caller from the configuration (the CLI's media plan).
    public struct Parts: Sendable {
        public var node: Node
        public var session: Session
        public var advertiser: Advertiser
        public var browser: Browser
        public var trust: IdentityStore

        public init(node: Node, session: Session, advertiser: Advertiser, browser: Browser, trust: IdentityStore) {
            self.node = node; self.session = session; self.advertiser = advertiser; self.browser = browser; self.trust = trust
        }
    }

    /// How often the daemon scans its outbox, expires lapsed items and retries.
    public struct Timing: Sendable {
        /// Between two scans of the outbox (and expiry sweeps).
        public var scanInterval: Duration = .seconds(2)
        /// How long an item a peer refused for now (quota, no space, not accepted) rests.
        public var refusalRest: Duration = .seconds(60)
        /// Least time between two invitations of the same peer.
        public var inviteBackoff: Duration = .seconds(10)
        /// How long an announced item waits for the peer's answer before it is announced again
        /// (an answer lost with a link that went down, a peer that restarted).
        public var answerTimeout: Duration = .seconds(30)
        public init() {}
    }

    /// How an outbox file's item ID is derived.
    public enum ItemNaming: Sendable {
        /// From the peer, the path and the file's identity (device, inode, size, modification
        /// time): a file replaced under the same name is a new item. The default.
        case fileIdentity
        /// From the peer, the file's path inside the outbox and its size: the same in every
        /// run of a simulation (the harness's memory backend), where inodes and modification
        /// times differ from run to run. A file replaced by one of the same name and size is
        /// taken for the item already sent.
        case pathInOutbox
    }

    let config: DaemonConfig
    let timing: Timing
    let naming: ItemNaming
    let parts: Parts
    let ledger: Ledger
    let log: Logger
    let service: StoreForwardService
    /// Wall-clock time for the ledger (item lifetimes cross restarts and machines).
    let clock: @Sendable () -> Timestamp
    /// Where incoming items' bytes are written until they verify: inside the inbox's file
    /// system (the landing is a rename), hidden from readers of the inbox.
    let staging: String

    var session: Session { parts.session }
    var node: Node { parts.node }

    /// Peers with a session now.
    var linked: Set<PeerID> = []
    /// This side's service stream to each of them, once open, and the openings under way.
    var streams: [PeerID: OutgoingStream] = [:]
    var opening: [PeerID: Task<OutgoingStream?, Never>] = [:]
    /// How often each peer left: a stream opened before a leaving is not kept after it.
    var departures: [PeerID: Int] = [:]
    /// When each announced item was announced: unanswered for `answerTimeout`, it goes again.
    var announcedAt: [ItemID: Timestamp] = [:]
    /// Items announced to a peer on this connection and not yet answered.
    var announced: [PeerID: Set<ItemID>] = [:]
    /// Items being sent as resources.
    var transfers: [ItemID: Task<Void, Never>] = [:]
    /// Items this node asked a peer for (WANT), by the ID in the resource's name.
    var wanted: [PeerID: [ItemID: StoreForwardRecord]] = [:]
    /// Peers found by the browser, for invitations.
    var found: [PeerID: PeerInfo] = [:]
    var lastInvitation: [PeerID: Double] = [:]
    /// Peers with an invitation of this node waiting for their answer.
    var inviting: Set<PeerID> = []
    /// The endpoints each invitation in `inviting` dials.
    var invitedAt: [PeerID: [TransportEndpoint]] = [:]
    /// Items a peer refused for now, not announced again before the monotonic time given (`uptime`).
    var resting: [ItemID: Double] = [:]
    /// Items this node refused because they did not fit on its inbox's disk, by holder: asked
    /// for (WANT) as soon as they fit, without waiting for the holder to announce them again.
    var waitingForSpace: [PeerID: [ItemID: StoreForwardRecord]] = [:]
    /// Outbox folders already reported as unusable.
    var reportedFolders: Set<String> = []
    /// What the daemon did, for the API's event stream (`GET /v1/events`).
    public nonisolated let events: DaemonEvents
    /// Counters and gauges for `GET /metrics` (docs/METRICS.md); it counts `events` too.
    public nonisolated let metrics: DaemonMetrics
    /// When the daemon was made (`Runtime.seconds()`, monotonic), for its uptime.
    nonisolated let startedAt = Runtime.seconds()
    /// Display names of the peers with a session now.
    var peerNames: [PeerID: String] = [:]
    /// Outbox files the API is queueing itself (the outbox scan leaves them alone).
    var submitting: Set<String> = []
    /// Unknown peers that asked (`accept = "known"`) and wait for the owner's answer.
    var pending = PendingList<Invitation>()
    private var tasks: [Task<Void, Never>] = []

    public init(config: DaemonConfig, parts: Parts, ledger: Ledger, log: Logger, events: DaemonEvents = DaemonEvents(),
                metrics: DaemonMetrics = DaemonMetrics(), timing: Timing = Timing(), naming: ItemNaming = .fileIdentity,
                clock: @escaping @Sendable () -> Timestamp = FieldDaemon.wallClock) throws {
        self.config = config
        self.naming = naming
        self.events = events
        self.metrics = metrics
        events.observe { metrics.record($0) }
        self.timing = timing
        self.parts = parts
        self.ledger = ledger
        self.log = log
        self.clock = clock
        self.staging = (config.inbox as NSString).appendingPathComponent(".peerlink-staging")
        self.service = StoreForwardService()
        try parts.node.register(service)
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: config.outbox, withIntermediateDirectories: true)
    }

    /// Runs until `stop()`: every loop of the daemon as a task of its own.
    public func start() {
        let parts = self.parts
        tasks.append(Task { for await e in parts.session.events { await self.handle(e) } })
        tasks.append(Task { for await inv in parts.advertiser.invitations { await self.answer(inv) } })
        tasks.append(Task {
            for await e in parts.browser.events {
                switch e {
                case let .found(p), let .updated(p): await self.found(p)
                case let .lost(p): await self.lost(p)
                case let .notice(text): await self.log.notice("discovery: \(text)")
                }
            }
        })
        tasks.append(Task { for await s in self.service.incoming { await self.read(s) } })
        tasks.append(Task {
            while !Task.isCancelled {
                await self.tick()
                try? await Runtime.sleep(seconds: self.timing.scanInterval.inSeconds)
            }
        })
        parts.session.follow(parts.browser)
    }

    /// Stops the loops and the transfers under way (their partial files stay for a resume),
    /// leaves the session and stops advertising and browsing.
    public func stop() async {
        for t in tasks { t.cancel() }
        for t in transfers.values { t.cancel() }
        tasks.removeAll()
        service.finish()
        parts.browser.stop()
        await parts.session.disconnect()
        await parts.advertiser.stop()
        await parts.node.stop()
    }

    /// The wall clock the ledger reads by default: the system's, or a simulation's virtual one
    /// (`Runtime.wallClock`), so that lifetimes run in the harness's virtual time too.
    public static let wallClock: @Sendable () -> Timestamp = {
        Timestamp(millisecondsSince1970: Int64((Runtime.wallClock() * 1000).rounded(.down)))
    }

    /// Answers at once while the actor is free: the systemd watchdog's liveness check.
    public func heartbeat() -> Bool { true }

    // MARK: invitations and presence

    func answer(_ inv: Invitation) {
        let who = "\(inv.displayName) [\(inv.peer)]"
        // A blocked peer is declined unasked, whatever the rule; debug only, as it may ask often.
        if parts.trust.blockedPeers()[inv.peer] != nil {
            log.debug("declined invitation from a blocked peer", metadata: ["peer": "\(who)"])
            inv.decline()
            return
        }
        let ok: Bool
        switch config.accept {
        case .all: ok = true
        case .none: ok = false
        case .known: ok = parts.trust.trustedPeers()[inv.peer] != nil
        }
        if ok {
            log.info("accepted invitation", metadata: ["peer": "\(who)"])
            inv.accept(into: session)
        } else if config.accept == .known {
            holdForOwner(inv)
        } else {
            log.notice("declined invitation", metadata: ["peer": "\(who)", "why": "\(config.accept == .none ? "accept = none" : "not in the trust store (peerlink trust add \(inv.peer))")"])
            inv.decline()
        }
    }

    func found(_ p: PeerInfo) {
        let before = found.updateValue(p, forKey: p.peerID)
        if before == nil {
            events.publish(.peerFound, peer: p.peerID.description, name: p.displayName)
        } else if before?.endpoints != p.endpoints {
            // The peer moved (a new address after a network change): the pause after the last
            // invitation was for where it was.
            lastInvitation[p.peerID] = nil
        }
        inviteIfWorkWaits(p.peerID)
    }

    func lost(_ p: PeerID) {
        guard let gone = found.removeValue(forKey: p) else { return }
        events.publish(.peerLost, peer: p.description, name: gone.displayName)
    }

    /// Invites `peer` when items wait for it, it is in range and not in the session, and no
    /// invitation of it is still waiting for an answer (a peer whose owner has it in a pending
    /// list answers only when the owner does: a second invitation would replace the first).
    func inviteIfWorkWaits(_ peer: PeerID) {
        guard !linked.contains(peer), !inviting.contains(peer), let info = found[peer] else { return }
        let now = uptime
        if let last = lastInvitation[peer], now - last < timing.inviteBackoff.inSeconds { return }
        guard let pending = try? ledger.nextItems(for: peer, limit: 1, now: clock()), !pending.isEmpty else { return }
        lastInvitation[peer] = now
        inviting.insert(peer)
        invitedAt[peer] = info.endpoints
        let session = self.session, log = self.log
        Task {
            do {
                try await parts.browser.invite(info, to: session, timeout: .seconds(30))
                self.invitationEnded(peer, failed: false)
            } catch {
                log.notice("could not invite a peer items wait for", metadata: ["peer": "\(info.displayName) [\(peer)]", "error": "\(error)"])
                self.invitationEnded(peer, failed: true)
            }
        }
    }

    func invitationEnded(_ peer: PeerID, failed: Bool) {
        inviting.remove(peer)
        let dialled = invitedAt.removeValue(forKey: peer)
        if failed, let now = found[peer]?.endpoints, now != dialled {
            // Found somewhere else while this invitation dialled the old place (it timed out
            // there): try the new one now rather than after the pause.
            lastInvitation[peer] = nil
            inviteIfWorkWaits(peer)
            return
        }
        lastInvitation[peer] = uptime
    }

    // MARK: the session's events

    func handle(_ e: Session.Event) async {
        metrics.observe(e)
        switch e {
        case let .peerStateChanged(peer, name, state):
            if state == .connected, !linked.contains(peer) {
                linked.insert(peer)
                log.info("peer connected", metadata: ["peer": "\(name) [\(peer)]"])
                peerNames[peer] = name
                events.publish(.peerConnected, peer: peer.description, name: name)
                await connected(peer)
            } else if state == .notConnected {
                log.info("peer left", metadata: ["peer": "\(name) [\(peer)]"])
                if peerNames.removeValue(forKey: peer) != nil { events.publish(.peerLeft, peer: peer.description, name: name) }
                linked.remove(peer)
                departures[peer, default: 0] += 1
                streams[peer] = nil
                opening.removeValue(forKey: peer)?.cancel()
                announced[peer] = nil
                wanted[peer] = nil
                waitingForSpace[peer] = nil
            }
        case let .resourceOffered(offer):
            await offered(offer)
        case let .resourceFinished(p, path, error) where p.direction == .receiving:
            await received(p, path: path, error: error)
        case let .message(from, _, _):
            log.debug("message ignored (the daemon's API will deliver messages)", metadata: ["peer": "\(from)"])
        case let .streamOpened(s):
            log.notice("stream refused: the daemon takes files and items only", metadata: ["peer": "\(s.peer)", "name": "\(s.name)"])
            await s.cancel()
        default:
            break
        }
    }

    /// A peer joined: open this side's service stream and announce what waits for it.
    func connected(_ peer: PeerID) async {
        announced[peer] = []
        if await outgoing(to: peer) != nil { await announce(to: peer) }
    }

    /// This side's service stream to `peer`, opened on first use: the peer's records may arrive
    /// (and need answers) before this side has handled the peer's arrival, and every caller
    /// waits for the same opening. A stream opened for a session that ended meanwhile is not
    /// kept (`departures` counts the peer's leavings).
    func outgoing(to peer: PeerID) async -> OutgoingStream? {
        if let s = streams[peer] { return s }
        let departed = departures[peer, default: 0]
        let task: Task<OutgoingStream?, Never>
        if let t = opening[peer] {
            task = t
        } else {
            let session = self.session, log = self.log
            task = Task {
                do {
                    return try await session.openServiceStream(name: StoreForwardService.streamName, to: peer)
                } catch {
                    log.debug("no store-and-forward stream", metadata: ["peer": "\(peer)", "error": "\(error)"])
                    return nil
                }
            }
            opening[peer] = task
        }
        let stream = await task.value
        if opening[peer] == task { opening[peer] = nil }
        guard let stream, departures[peer, default: 0] == departed else { return nil }
        if streams[peer] == nil { streams[peer] = stream }
        return streams[peer]
    }

    /// Reads a peer's service stream until it ends.
    func read(_ stream: IncomingStream) {
        let peer = stream.peer
        Task {
            var deframer = StoreForwardDeframer()
            do {
                while let chunk = try await stream.read() {
                    deframer.append(chunk)
                    while let record = try deframer.next() { await self.handle(record, from: peer) }
                }
            } catch {
                self.log.warning("store-and-forward stream ended", metadata: ["peer": "\(peer)", "error": "\(error)"])
                self.metrics.error(.stream)
                await stream.cancel()
            }
        }
    }

    func handle(_ record: StoreForwardRecord, from peer: PeerID) async {
        switch record {
        case .item: await itemAnnounced(record, by: peer)
        case let .have(id, size, digest, receivedAt): await peerHas(id, size: size, digest: digest, at: receivedAt, peer: peer)
        case let .want(id): await peerWants(id, peer: peer)
        case let .refuse(id, reason, text): await peerRefused(id, reason: reason, text: text, peer: peer)
        case .message: await messageArrived(record, from: peer)
        }
    }

    func send(_ record: StoreForwardRecord, to peer: PeerID) async {
        guard let stream = await outgoing(to: peer) else {
            log.debug("record not sent: the peer left", metadata: ["peer": "\(peer)"])
            return
        }
        do {
            try await stream.write(record.framed())
        } catch {
            log.warning("could not write to the store-and-forward stream", metadata: ["peer": "\(peer)", "error": "\(error)"])
            metrics.error(.stream)
        }
    }

    // MARK: time

    /// The periodic work: new files in the outbox, lapsed items, peers to invite.
    func tick() async {
        admitNewlyTrusted()
        await scanOutbox()
        await expireItems()
        await askForItemsThatFitNow()
        for peer in found.keys { inviteIfWorkWaits(peer) }
        for peer in linked { await announce(to: peer) }
    }
}
