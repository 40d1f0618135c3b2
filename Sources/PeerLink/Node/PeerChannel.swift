import Foundation
@preconcurrency import Crypto
import PeerLinkCore
import PeerLinkWire

/// Serves one remote peer of a session: owns its links, drives the sans-I/O `SessionCore`
/// with their frames and a timer, and turns the core's events into session events.
package actor PeerChannel {
    nonisolated let peer: PeerID
    nonisolated let displayName: String
    nonisolated let remoteToken: [UInt8]
    let session: Session
    var core: SessionCore
    var links: [LinkID: SecureLink] = [:]
    private(set) var state: PeerState = .connecting
    var ended = false
    /// Negotiation of set-up media (Wi-Fi Direct) with this peer (PeerChannel+Upgrade).
    var upgrade: LinkUpgrade
    /// The negotiated link, while it is up.
    var upgradeLink: LinkID?
    /// Bulk that started before the upgraders' availability was known.
    var pendingBulkReason: String?
    /// The latest negotiation steps, for `peerlink links`.
    var upgradeHistory: [UpgradeRecord] = []
    /// The wait for the channel's next deadline (`armTimer`), and that deadline.
    private var timer: Task<Void, Never>?
    private var timerAt: UInt64?
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// The links as the policy sees them, and its choices (PeerLinkCore).
    var linkSet: LinkSet

    /// Our outgoing streams and resources the receiver cancelled.
    private(set) var refused: Set<UInt32> = []
    /// The application's incoming streams.
    private var incomingStreams: [UInt32: IncomingStream] = [:]
    /// The node services' sides of this peer (`NodeService`), resources first.
    let resources = ResourceHandler()
    private var handlers: [any PeerProtocolHandler]
    /// Each service's stream-name prefix, for the peer's streams it answers.
    private var streamOwners: [(prefix: String, handler: any PeerProtocolHandler)]

    init(session: Session, peer: PeerID, displayName: String, remoteToken: [UInt8], initiator: Bool, config: SessionConfig) {
        self.session = session
        self.peer = peer
        self.displayName = displayName
        self.remoteToken = remoteToken
        self.core = SessionCore(role: initiator ? .initiator : .responder, config: config)
        self.upgrade = LinkUpgrade(initiator: initiator, config: config.upgrade)
        self.linkSet = LinkSet(policy: session.policy)
        var handlers: [any PeerProtocolHandler] = [resources]
        var owners: [(prefix: String, handler: any PeerProtocolHandler)] = []
        for service in session.node.services {
            let h = service.makeHandler(peer: peer, session: session)
            handlers.append(h)
            if let prefix = service.streamPrefix { owners.append((prefix, h)) }
        }
        self.handlers = handlers
        self.streamOwners = owners
    }

    var isAlive: Bool { !ended }
    /// The ids of the live links.
    func linkIDs() -> Set<LinkID> { Set(links.keys) }

    /// The path each live link runs on (`LinkPaths.key`), from its remote address.
    func linkPathKeys() -> [LinkID: String] {
        var out: [LinkID: String] = [:]
        for (id, l) in links {
            let c = l.connection
            let host: String
            if let h = c.remoteHost {
                host = h
            } else if let first = c.remoteDescription.split(separator: " ").first {
                // "AA:BB:…:FF channel 3", "memory://b-bt", "[fe80::1]%p2p-wlan0-0"
                host = String(first.hasPrefix("memory://") ? first.dropFirst("memory://".count) : first)
            } else {
                continue
            }
            out[id] = LinkPaths.key(medium: l.medium, host: host)
        }
        return out
    }

    // MARK: links

    func add(_ link: SecureLink) {
        guard !ended else { link.close(); return }
        // Datagrams first: once the peer is reported connected, its unreliable sends must land.
        link.receiveDatagrams { [weak self] frame in
            guard case let .unreliable(payload) = frame else { return }
            Task { await self?.receivedDatagram(payload) }
        }
        links[link.id] = link
        session.wire.linkUp(link)
        linkSet.add(LinkSet.Link(id: link.id, linkClass: link.medium.linkClass, fast: PeerChannel.isFast(link.medium),
                                 negotiated: link.medium.traits.negotiated, maxFrame: Int(link.remoteHello.maxFrame)))
        // A link that sends in pieces (minor 2) takes frames of any size; only an older peer's
        // link makes the session cut every frame to fit it.
        if link.pieceLimit == nil { core.setRemoteMaxFrame(Int(link.remoteHello.maxFrame)) }
        core.sharedMinor = min(UInt8(PeerLinkProtocol.minor), link.remoteHello.minor)
        core.linkUp(link.id, now: Runtime.milliseconds())
        applyPolicy()
        session.emit(.linkChanged(peer, link: link.id, medium: link.medium, up: true, reason: .authenticated(remote: link.connection.remoteDescription)))
        if state != .connected {
            state = .connected
            session.emit(.peerStateChanged(peer, displayName: displayName, state: .connected))
            learnUpgradeAvailability()
        }
        upgradeNoticeLinkUp(link)
        Task { [weak self] in
            do {
                while let frames = try await link.receiveBatch() {
                    guard let self else { return }
                    await self.received(consume frames, on: link.id)
                }
                await self?.linkGone(link.id, reason: .closedByRemote)
            } catch {
                await self?.linkGone(link.id, reason: .failed(DialFailure.Cause(error)))
            }
        }
        process()
    }

    private func received(_ frames: consuming [Frame], on link: LinkID) {
        let now = Runtime.milliseconds()
        // Each frame is let go as the core takes it, so a payload the core keeps (a message's
        // first part) is the core's alone and the next part can be appended to it in place.
        var pending = frames
        pending.reverse()
        while let frame = pending.popLast() { core.receive(frame, on: link, now: now) }
        process()
    }

    private func receivedDatagram(_ payload: [UInt8]) {
        guard !ended else { return }
        session.emit(.message(from: peer, bytes: payload, mode: .unreliable))
    }

    /// When the channel next needs waking, and how late it may be: the core's timers (its
    /// idle keepalives may come up to `lazySlack` late, so that the process's idle sessions
    /// wake together), the negotiation's, the policy's re-evaluation while there is a choice
    /// of links, and a look at the reader while it is behind (its catching up is no event of
    /// this channel). Nil when nothing waits for time.
    private func nextDeadline(now: UInt64) -> (at: UInt64, latest: UInt64)? {
        let core = self.core.nextDeadlines(now: now)
        var lazy = [core.lazy, upgrade.nextDeadline(now: now)]
        lazy.append(linkSet.nextPolicyRun(now: now))
        var urgent = [core.urgent]
        if self.core.acknowledgementsPaused { urgent.append(now + PeerChannel.readerCheckInterval) }
        let u = urgent.compactMap { $0 }.min(), l = lazy.compactMap { $0 }.min()
        guard let at = [u, l].compactMap({ $0 }).min() else { return nil }
        return (at, min(u ?? .max, l.map { $0 + PeerChannel.lazySlack } ?? .max))
    }

    /// How late an idle channel's keepalive work may be done (ms).
    static let lazySlack: UInt64 = 100

    /// How often a channel whose reader is behind looks whether it caught up (ms).
    static let readerCheckInterval: UInt64 = 50

    /// Waits for the next deadline on the process's `DeadlineWheel` (on a timer of its own in
    /// a simulation), then ticks; no timer while nothing waits for time. A timer already set
    /// for that time or earlier is kept (waking early is harmless).
    private func armTimer() {
        guard !ended, let (at, latest) = nextDeadline(now: Runtime.milliseconds()) else {
            timer?.cancel()
            timer = nil
            timerAt = nil
            return
        }
        if let set = timerAt, set <= at, timer != nil { return }
        timer?.cancel()
        timerAt = at
        timer = Task { [weak self] in
            if Runtime.simulation != nil {
                let now = Runtime.milliseconds()
                if at > now {
                    do { try await Runtime.sleep(nanoseconds: (at - now) * 1_000_000) } catch { return }
                }
            } else if at > Runtime.milliseconds() {
                guard await DeadlineWheel.shared.wait(until: at, latest: latest) else { return }
            }
            await self?.timerFired(at)
        }
    }

    private func timerFired(_ at: UInt64) {
        guard timerAt == at else { return }  // replaced by an earlier one meanwhile
        timer = nil
        timerAt = nil
        tick()
    }

    private func tick() {
        guard !ended else { return }
        let now = Runtime.milliseconds()
        core.tick(now: now)
        upgradeTick(now: now)
        // Links age past the policy's dwell time and measurements change without events:
        // re-evaluate the choice a few times a second when there is a choice to make.
        if let at = linkSet.nextPolicyRun(now: now), now >= at { applyPolicy() }
        process()
    }


    func linkGone(_ id: LinkID, reason: LinkChangeReason) {
        guard let link = links.removeValue(forKey: id) else { return }
        _ = linkSet.remove(id)
        link.close()
        session.wire.linkEnded(link)
        core.linkDown(id)
        applyPolicy()
        session.emit(.linkChanged(peer, link: id, medium: link.medium, up: false, reason: reason))
        session.linkDown(peer, id)
        upgradeNoticeLinkDown(id, reason: reason.description)
        process()
        if links.isEmpty { end(reason: reason.description) }
    }

    /// Leaves gracefully: tells the peer on every link, lets the frames out, then closes.
    func leave(reason: CloseReason = .leaving, text: String = "") async {
        guard !ended else { return }
        core.leave(reason: reason, text: text, now: Runtime.milliseconds())
        process()
        let all = Array(links.values)
        await withTaskGroup(of: Void.self) { g in
            for l in all { g.addTask { await l.connection.flush() } }
        }
        end(reason: text.isEmpty ? "left the session" : text)
    }

    private func end(reason: String) {
        guard !ended else { return }
        ended = true
        timer?.cancel()
        timer = nil
        upgrade.stop(reason: "the session with the peer ended", now: Runtime.milliseconds())
        runUpgradeActions()
        for l in links.values { l.close(); session.wire.linkEnded(l) }
        links.removeAll()
        for s in incomingStreams.values { s.buffer.finish(.notConnected(peer)) }
        incomingStreams.removeAll()
        for h in handlers { h.ended(reason: reason, in: self) }
        state = .notConnected
        session.emit(.peerStateChanged(peer, displayName: displayName, state: .notConnected))
        wakeAll()
        session.channelEnded(self)
    }

    // MARK: the core's outputs

    func process() {
        defer { armTimer() }
        core.acknowledgementsPaused = session.readerIsBehind
        // Frames for a link go out together (one encryption pass, one write), flushed before
        // each event so that anything an event sends still follows them.
        var batch: [(LinkID, [Frame])] = []
        func flushBatch() {
            for (link, frames) in batch { links[link]?.send(frames) }
            batch.removeAll()
        }
        for output in core.takeOutputs() {
            switch output {
            case let .transmit(link, frame):
                guard let l = links[link] else { continue }
                if case .unreliable = frame, l.sendDatagram(frame) { continue }
                if let i = batch.firstIndex(where: { $0.0 == link }) { batch[i].1.append(frame) } else { batch.append((link, [frame])) }
            case let .event(e):
                flushBatch()
                handle(e)
            }
        }
        flushBatch()
        for h in handlers { h.passEnded(in: self) }
        reportCarriers()
        wakeAll()
    }

    private func handle(_ e: SessionEvent) {
        // The node services' events first (resources; streams a service opened).
        for h in handlers where h.handle(e, in: self) { return }
        switch e {
        case let .message(bytes, reliable):
            session.emit(.message(from: peer, bytes: bytes, mode: reliable ? .reliable : .unreliable))
        case let .linkDead(id):
            let silent = LinkChangeReason.silent(for: core.config.deadAfter)
            if let link = links.removeValue(forKey: id) {
                _ = linkSet.remove(id)
                link.close()
                session.wire.linkEnded(link)
                session.emit(.linkChanged(peer, link: id, medium: link.medium, up: false, reason: silent))
                session.linkDown(peer, id)
                upgradeNoticeLinkDown(id, reason: silent.description)
            }
            applyPolicy()
            if links.isEmpty { end(reason: "no traffic for \(core.config.deadAfter.inSeconds) s") }
        case let .roundTrip(link, ms):
            session.emit(.roundTrip(peer, link: link, rtt: .milliseconds(clamping: ms)))
            if links.count > 1 { applyPolicy() }
        case let .linkSuspected(id, silent):
            linkSet.suspected(id, silentFor: silent)
        case let .linkRecovered(id):
            linkSet.recovered(id)
        case let .streamOpened(id, name):
            let s = IncomingStream(peer: peer, name: name, id: id, channel: self)
            incomingStreams[id] = s
            if NodeServices.isReserved(name) {
                // A stream of one of PeerLink's own protocols: its service's, never the application's.
                if let owner = streamOwners.first(where: { name.hasPrefix($0.prefix) }) {
                    owner.handler.streamOpened(s, in: self)
                } else {
                    incomingStreams[id] = nil
                    core.close(stream: id, cancel: true, now: Runtime.milliseconds())
                }
            } else {
                session.emit(.streamOpened(s))
            }
        case let .streamData(id, bytes):
            incomingStreams[id]?.buffer.push(Array(bytes))
            upgrade.bulkActivity(now: Runtime.milliseconds())
        case let .streamClosed(id, status):
            if let s = incomingStreams.removeValue(forKey: id) {
                s.buffer.finish(status == .finished ? nil : .resourceFailed(.cancelledBySender(name: nil)))
            } else {
                refused.insert(id)  // our outgoing stream or resource, cancelled by the receiver
            }
        case .streamWritable:
            break
        case .resourceOffered, .resourceOfferedKeyed, .resourceDigest, .resourceAccepted, .resourceResult, .resourceError:
            break  // the resource service's
        case let .linkSetup(m):
            receivedLinkSetup(m)
        case let .remoteLeft(_, text):
            end(reason: text.isEmpty ? "the peer left" : "the peer left: \(text)")
        case let .protocolViolation(why):
            core.leave(reason: .protocolError, text: why, now: Runtime.milliseconds())
            process()
            end(reason: "protocol error: \(why)")
        }
    }

    // MARK: link policy

    /// Asks the session's policy which link carries each role and tells the core.
    private func applyPolicy() { linkSet.apply(to: &core, now: Runtime.milliseconds()) }

    /// Typical bytes per second from which a medium counts as fast for fragment sizes.
    static let fastMedium = 1_000_000
    private static func isFast(_ m: Medium) -> Bool { m.traits.typicalBytesPerSecond >= fastMedium }

    private func reportCarriers() {
        guard !ended else { return }
        for c in linkSet.carrierChanges(in: core) {
            session.emit(.carrierChanged(peer, link: c.link, role: c.role, reason: c.reason))
        }
    }

    // MARK: waiting

    private func wakeAll() {
        let w = waiters
        waiters.removeAll()
        for c in w { c.resume() }
    }

    /// Suspends until the core produced something (an ack, credit, an answer) or the channel ended.
    func waitForChange() async {
        await withCheckedContinuation { waiters.append($0) }
    }

    // MARK: messages

    func send(_ bytes: [UInt8], mode: SendMode) async throws {
        while true {
            guard !ended else { throw PeerLinkError.notConnected(peer) }
            do {
                try core.send(bytes, reliable: mode == .reliable, now: Runtime.milliseconds())
                process()
                return
            } catch SessionError.backlogFull {
                await waitForChange()
            } catch SessionError.noLink {
                throw PeerLinkError.notConnected(peer)
            }
        }
    }

    // MARK: resources (the node's resource service, ResourceHandler)

    func sendResource(path: String, name: String, progress: (@Sendable (ResourceProgress) -> Void)?) async throws {
        try await resources.send(path: path, name: name, progress: progress, in: self)
    }

    /// Stops receiving a resource; the partial file is kept so a later transfer can resume.
    func cancelIncoming(_ offer: ResourceOffer) { resources.cancelIncoming(offer, in: self) }

    /// Accepts an offer into `directory`, refusing it (and telling the sender why) when the
    /// bytes still to come do not fit in the free space less `keepFree`.
    func acceptResource(_ offer: ResourceOffer, directory: String, keepFree: UInt64) throws {
        try resources.accept(offer, directory: directory, keepFree: keepFree, in: self)
    }

    func declineResource(_ offer: ResourceOffer) { resources.decline(offer, in: self) }

    /// A file writer's completion, back on this actor.
    func resourceWritten(_ id: UInt32, _ count: Int, _ result: Result<UInt64, IncomingFileWriter.Failure>) {
        resources.written(id, count, result, in: self)
    }

    /// A file's verification, back on this actor.
    func resourceVerified(_ id: UInt32, _ result: Result<String, ResourceFailure>) { resources.verified(id, result, in: self) }

    // MARK: streams

    func openStream(name: String) throws -> OutgoingStream {
        guard !ended else { throw PeerLinkError.notConnected(peer) }
        let id = try core.openStream(name: name, now: Runtime.milliseconds())
        bulkStarting("stream '\(name)'")
        process()
        return OutgoingStream(peer: peer, name: name, id: id, channel: self)
    }

    func writeStream(_ id: UInt32, _ bytes: [UInt8]) async throws {
        var offset = 0
        while offset < bytes.count {
            guard !ended else { throw PeerLinkError.notConnected(peer) }
            if refused.contains(id) { throw PeerLinkError.resourceFailed(.cancelledByReceiver(name: nil)) }
            guard let credit = core.credit(of: id) else { throw PeerLinkError.resourceFailed(.streamClosed(id: id)) }
            if credit == 0 || core.bulkBacklogBytes > core.config.sendWindow {
                await waitForChange()
                continue
            }
            let n = min(credit, bytes.count - offset)
            try core.write(bytes[offset..<offset + n], to: id, now: Runtime.milliseconds())
            offset += n
            process()
        }
    }

    func closeStream(_ id: UInt32, cancel: Bool) {
        core.close(stream: id, cancel: cancel, now: Runtime.milliseconds())
        process()
    }

    func cancelStream(_ id: UInt32) {
        incomingStreams.removeValue(forKey: id)?.buffer.finish()
        core.close(stream: id, cancel: true, now: Runtime.milliseconds())
        process()
    }

    func consumed(_ n: Int, of id: UInt32) {
        core.consumed(n, of: id, now: Runtime.milliseconds())
        process()
    }

    // MARK: observation

    func snapshot() -> PeerLinks {
        let now = Runtime.milliseconds()
        let list = links.values.sorted { $0.id < $1.id }.map { l in
            let carried = LinkRole.allCases.filter { linkSet.carrier(of: $0, in: core) == l.id }.map { ($0, linkSet.reason(for: $0, on: l.id)) }
            var roles = carried.map { ($0.0.rawValue, $0.1) }
            let copy = core.copyLink == l.id ? linkSet.choice.messageCopyReason ?? CarrierReason(.other("copy of reliable messages")) : nil
            if let copy { roles.append((LinkSnapshot.copyRole, copy)) }
            let st = core.stats(of: l.id, now: now)
            let why = roles.isEmpty
                ? (linkSet.suspicion(of: l.id).map { "suspected: \($0)" } ?? "standby (\(session.policy.kind.rawValue) prefers other links)")
                : roles.map { "\($0.0): \($0.1)" }.joined(separator: "; ")
            return LinkSnapshot(id: l.id, medium: l.medium, remote: l.connection.remoteDescription, datagram: l.datagramDescription,
                                datagrams: l.datagramCounts, wire: l.wireBytes, rttMillis: st?.rttMillis, loss: st?.loss ?? 0, throughput: st?.throughput,
                                state: st?.suspect == true ? "suspected" : "up",
                                carries: roles.map(\.0),
                                reasons: Dictionary(uniqueKeysWithValues: carried),
                                messageCopyReason: copy,
                                reason: why)
        }
        return PeerLinks(peer: peer, displayName: displayName, state: state, links: list, upgrades: upgradeHistory)
    }
}

extension PeerChannel {
    /// The channel's state in one line, for diagnosing a transfer that does not progress.
    func debugState() -> String {
        "peer \(peer.short) ended=\(ended) links=\(links.keys.sorted()) waiters=\(waiters.count) refused=\(refused) "
            + resources.debugState(core) + " "
            + "unacked=\(core.unacknowledgedBytes) bulkBacklog=\(core.bulkBacklogBytes) ackPaused=\(core.acknowledgementsPaused) "
            + "fragment=\(core.fragmentSize)/\(core.bulkFragmentSize)"
    }

    /// The sizes of the pieces this channel cuts messages, and bulk bytes, queued now into (tests).
    var fragmentSizes: (messages: Int, bulk: Int) { (core.fragmentSize, core.bulkFragmentSize) }
}
