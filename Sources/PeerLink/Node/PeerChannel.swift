import Foundation
@preconcurrency import Crypto

/// Serves one remote peer of a session: owns its links, drives the sans-I/O `SessionCore`
/// with their frames and a timer, and turns the core's events into session events.
actor PeerChannel {
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
    private var tickTask: Task<Void, Never>?
    /// The tick loop's current wait while the session is quiet (see `nap`).
    private var quietNap: Task<Void, Never>?
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// The policy's current choice, and when each link came up (for its dwell time).
    private var choice = LinkChoice()
    /// The carrier last reported per role, to emit `carrierChanged` only on change.
    private var reported: [LinkRole: LinkID] = [:]

    // Outgoing resources and streams
    private var accepted: [UInt32: UInt64] = [:]
    private var results: [UInt32: Bool] = [:]
    private var refused: Set<UInt32> = []
    // Incoming
    private var incomingStreams: [UInt32: IncomingStream] = [:]
    private var offers: [UInt32: ResourceOffer] = [:]
    private var receiving: [UInt32: IncomingFile] = [:]
    /// File bytes that arrived during this `process` pass, per resource: each file's writer
    /// gets them in one job with one completion (`flushFileBytes`), not one per record.
    private var unwritten: [UInt32: [ArraySlice<UInt8>]] = [:]

    /// Why the receiver refused or stopped one of our outgoing resources (RESOURCE_ERROR).
    private var refusals: [UInt32: ResourceError] = [:]

    struct IncomingFile {
        let offer: ResourceOffer
        let directory: String
        let writer: IncomingFileWriter
        /// Bytes in the part file (written and hashed).
        var received: UInt64
        let resumedFrom: UInt64
        var lastReported: UInt64
        /// Space promised to this file on its disk, released as it is written or dropped.
        let reservation: DiskReservation?
        /// Bytes handed to the writer and not yet written.
        var queued: UInt64 = 0
    }

    init(session: Session, peer: PeerID, displayName: String, remoteToken: [UInt8], initiator: Bool, config: SessionConfig) {
        self.session = session
        self.peer = peer
        self.displayName = displayName
        self.remoteToken = remoteToken
        self.core = SessionCore(role: initiator ? .initiator : .responder, config: config)
        self.upgrade = LinkUpgrade(initiator: initiator, config: config.upgrade)
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
        // A link that sends in pieces (minor 2) takes frames of any size; only an older peer's
        // link makes the session cut every frame to fit it.
        if link.pieceLimit == nil { core.setRemoteMaxFrame(Int(link.remoteHello.maxFrame)) }
        core.sharedMinor = min(UInt8(PeerLinkProtocol.minor), link.remoteHello.minor)
        core.linkUp(link.id, now: Clock.now())
        applyPolicy()
        session.emit(.linkChanged(peer, link: link.id, medium: link.medium, up: true, reason: "authenticated link to \(link.connection.remoteDescription)"))
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
                await self?.linkGone(link.id, reason: "closed by the remote")
            } catch {
                await self?.linkGone(link.id, reason: "\(error)")
            }
        }
        if tickTask == nil {
            // Busy: often enough to notice a stalled carrier within `suspectAfter`. Quiet
            // (nothing in flight or owed): a few times per keepalive interval; the nap ends
            // early as soon as there is something to do (`process`).
            let busy = UInt64(max(20, min(100, core.config.keepaliveInterval / 4, core.config.suspectAfter / 4)))
            let quiet = max(busy, min(250, core.config.keepaliveInterval / 4))
            tickTask = Task { [weak self] in
                while !Task.isCancelled {
                    guard let nap = await self?.nap(busy: busy, quiet: quiet) else { return }
                    await nap.value
                    await self?.tick()
                }
            }
        }
        process()
    }

    private func received(_ frames: consuming [Frame], on link: LinkID) {
        let now = Clock.now()
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

    /// The wait before the next tick; a quiet one (the shared `QuietBeat`) is kept in
    /// `quietNap` so that `process` can end it when work appears.
    private func nap(busy: UInt64, quiet: UInt64) -> Task<Void, Never> {
        let isQuiet = core.isQuiet && (upgrade.phase == .idle || upgrade.phase == .up)
        // Quiet channels share the process's beat (one timer wake-up for all of them).
        let nap = isQuiet ? Task<Void, Never> { await QuietBeat.every(quiet).wait() }
                          : Task<Void, Never> { _ = try? await Task.sleep(nanoseconds: busy * 1_000_000) }
        quietNap = isQuiet ? nap : nil
        return nap
    }

    private func tick() {
        guard !ended else { return }
        let now = Clock.now()
        core.tick(now: now)
        upgradeTick(now: now)
        // Links age past the policy's dwell time and measurements change without events:
        // re-evaluate the choice a few times a second when there is a choice to make.
        if links.count > 1, now >= lastPolicyRun + 250 { applyPolicy() }
        process()
    }

    private var lastPolicyRun: UInt64 = 0

    func linkGone(_ id: LinkID, reason: String) {
        guard let link = links.removeValue(forKey: id) else { return }
        link.close()
        core.linkDown(id)
        applyPolicy()
        session.emit(.linkChanged(peer, link: id, medium: link.medium, up: false, reason: reason))
        upgradeNoticeLinkDown(id, reason: reason)
        process()
        if links.isEmpty { end(reason: reason) }
    }

    /// Leaves gracefully: tells the peer on every link, lets the frames out, then closes.
    func leave(reason: CloseReason = .leaving, text: String = "") async {
        guard !ended else { return }
        core.leave(reason: reason, text: text, now: Clock.now())
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
        tickTask?.cancel()
        upgrade.stop(reason: "the session with the peer ended", now: Clock.now())
        runUpgradeActions()
        for l in links.values { l.close() }
        links.removeAll()
        for s in incomingStreams.values { s.buffer.finish(.notConnected(peer)) }
        incomingStreams.removeAll()
        flushFileBytes()  // what arrived is kept for a resume
        for (_, f) in receiving {
            f.writer.close()
            session.emit(.resourceFinished(progress(f), path: nil, error: "peer disconnected (\(reason)); the partial file is kept to resume"))
        }
        receiving.removeAll()
        state = .notConnected
        session.emit(.peerStateChanged(peer, displayName: displayName, state: .notConnected))
        wakeAll()
        session.channelEnded(self)
    }

    // MARK: the core's outputs

    func process() {
        defer {
            if let nap = quietNap, !core.isQuiet || (upgrade.phase != .idle && upgrade.phase != .up) {
                quietNap = nil
                nap.cancel()
            }
        }
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
        flushFileBytes()
        reportCarriers()
        wakeAll()
    }

    private func handle(_ e: SessionEvent) {
        switch e {
        case let .message(bytes, reliable):
            session.emit(.message(from: peer, bytes: bytes, mode: reliable ? .reliable : .unreliable))
        case let .linkDead(id):
            let seconds = Double(core.config.deadAfter) / 1000
            if let link = links.removeValue(forKey: id) {
                link.close()
                session.emit(.linkChanged(peer, link: id, medium: link.medium, up: false, reason: "nothing received for \(seconds) s (keepalive)"))
                upgradeNoticeLinkDown(id, reason: "nothing received for \(seconds) s (keepalive)")
            }
            applyPolicy()
            if links.isEmpty { end(reason: "no traffic for \(seconds) s") }
        case let .roundTrip(link, ms):
            session.emit(.roundTrip(peer, link: link, millis: ms))
            if links.count > 1 { applyPolicy() }
        case let .linkSuspected(id, silent):
            suspectReason[id] = "link \(id): nothing acknowledged or answered for \(silent) ms with data in flight"
        case let .linkRecovered(id):
            suspectReason[id] = nil
        case let .streamOpened(id, name):
            let s = IncomingStream(peer: peer, name: name, id: id, channel: self)
            incomingStreams[id] = s
            session.emit(.streamOpened(s))
        case let .streamData(id, bytes):
            if let s = incomingStreams[id] {
                s.buffer.push(Array(bytes))
            } else if receiving[id] != nil {
                writeResource(id, bytes)
            }
            upgrade.bulkActivity(now: Clock.now())
        case let .streamClosed(id, status):
            flushFileBytes()  // a file's last bytes go to its writer before its end
            if let s = incomingStreams.removeValue(forKey: id) {
                s.buffer.finish(status == .finished ? nil : .resourceFailed("stream cancelled by the sender"))
            } else if receiving[id] != nil {
                finishResource(id, status: status)
            } else if offers.removeValue(forKey: id) == nil {
                refused.insert(id)  // our outgoing stream or resource, cancelled by the receiver
            }
        case .streamWritable:
            break
        case let .resourceOffered(id, name, size, sha):
            let offer = ResourceOffer(peer: peer, stream: id, name: SafeFileName.from(name), size: size, sha256: sha)
            offers[id] = offer
            session.emit(.resourceOffered(offer))
        case let .resourceAccepted(id, offset):
            accepted[id] = offset
        case let .resourceResult(id, ok):
            results[id] = ok
        case let .resourceError(id, reason):
            refusals[id] = reason
        case let .linkSetup(m):
            receivedLinkSetup(m)
        case let .remoteLeft(_, text):
            end(reason: text.isEmpty ? "the peer left" : "the peer left: \(text)")
        case let .protocolViolation(why):
            core.leave(reason: .protocolError, text: why, now: Clock.now())
            process()
            end(reason: "protocol error: \(why)")
        }
    }

    // MARK: link policy

    /// Why a link is suspected, while it is.
    private var suspectReason: [LinkID: String] = [:]

    /// Asks the session's policy which link carries each role and tells the core.
    private func applyPolicy() {
        let now = Clock.now()
        let metrics = links.values.map { l in
            let st = core.stats(of: l.id, now: now)
            return LinkMetrics(id: l.id, linkClass: l.medium.linkClass, age: st?.age ?? 0, rttMillis: st?.rttMillis,
                               loss: st?.loss ?? 0, throughput: st?.throughput, maxFrame: Int(l.remoteHello.maxFrame),
                               negotiated: l.medium.traits.negotiated)
        }
        lastPolicyRun = now
        choice = session.policy.choose(metrics, previous: choice)
        suspectReason = suspectReason.filter { links[$0.key] != nil }
        if core.preferredLink != choice.carrier[.reliable] { core.preferredLink = choice.carrier[.reliable] }
        if core.preferredBulkLink != choice.carrier[.bulk] { core.preferredBulkLink = choice.carrier[.bulk] }
        core.preferredUnreliableLink = choice.carrier[.unreliable]
        core.preferredCopyLink = choice.messageCopy
        if let rate = choice.messageCopyRate { core.copyBytesPerSecond = rate }
        // Large message fragments only while no slow link could end up carrying one (a lane
        // moves on handover): on Bluetooth a small message would wait behind it for a third of
        // a second. Bulk bytes get large fragments while their own carrier is fast; should it
        // go, those already queued cross the slow link in pieces.
        core.fastLinksOnly = !links.isEmpty && links.values.allSatisfy { PeerChannel.isFast($0.medium) }
        core.fastBulkCarrier = choice.carrier[.bulk].flatMap { links[$0] }.map { PeerChannel.isFast($0.medium) } ?? false
    }

    /// Typical bytes per second from which a medium counts as fast for fragment sizes.
    static let fastMedium = 1_000_000
    private static func isFast(_ m: Medium) -> Bool { m.traits.typicalBytesPerSecond >= fastMedium }

    /// The link that really carries `role` now (the core may avoid a suspected link).
    private func carrier(of role: LinkRole) -> LinkID? {
        switch role {
        case .control, .reliable: return core.carrier(of: .main)
        case .bulk: return core.carrier(of: .bulk)
        case .unreliable: return core.unreliableLink
        }
    }

    /// Why `role` is on `link`: the policy's reason, or the suspected carrier it avoids.
    private func reason(for role: LinkRole, on link: LinkID) -> String {
        if let chosen = choice.carrier[role], chosen != link, let why = suspectReason[chosen] {
            return "\(why); moved to link \(link) until it answers"
        }
        return choice.reason[role] ?? "oldest live link"
    }

    private func reportCarriers() {
        guard !ended else { return }
        for role in [LinkRole.reliable, .bulk, .unreliable] {
            guard let link = carrier(of: role), reported[role] != link else { continue }
            reported[role] = link
            session.emit(.carrierChanged(peer, link: link, role: role, reason: reason(for: role, on: link)))
        }
    }

    // MARK: waiting

    private func wakeAll() {
        let w = waiters
        waiters.removeAll()
        for c in w { c.resume() }
    }

    /// Suspends until the core produced something (an ack, credit, an answer) or the channel ended.
    private func waitForChange() async {
        await withCheckedContinuation { waiters.append($0) }
    }

    // MARK: messages

    func send(_ bytes: [UInt8], mode: SendMode) async throws {
        while true {
            guard !ended else { throw PeerLinkError.notConnected(peer) }
            do {
                try core.send(bytes, reliable: mode == .reliable, now: Clock.now())
                process()
                return
            } catch SessionError.backlogFull {
                await waitForChange()
            } catch SessionError.noLink {
                throw PeerLinkError.notConnected(peer)
            }
        }
    }

    // MARK: outgoing resources

    func sendResource(path: String, name: String, progress: (@Sendable (ResourceProgress) -> Void)?) async throws {
        let peer = self.peer
        // A faster link is proposed before the file is hashed: forming a Wi-Fi Direct group
        // and hashing a large file on a Raspberry Pi take seconds each, and need not take
        // them one after the other.
        let size = try FileIdentity(path: path).size
        guard !ended else { throw PeerLinkError.notConnected(peer) }
        bulkStarting("sending '\(name)' (\(ByteCount.text(size)))")
        // Hashing runs off this actor (FileDigest), once per file content, so a retry after a
        // lost link does not hash again. Each progress step counts as bulk activity, so that
        // a long hash does not look like an idle upgraded link.
        let (hashedSize, sha) = try await FileDigest.sha256(ofFileAt: path) { [weak self] done, total in
            progress?(ResourceProgress(peer: peer, name: name, direction: .sending, completed: done, total: total,
                                       resumedFrom: 0, stage: .hashing))
            Task { await self?.bulkContinues() }
        }
        guard hashedSize == size else { throw PeerLinkError.file("\(path) changed size while being read (\(size) → \(hashedSize) bytes)") }
        let reader = try OutgoingFileReader(path: path)
        guard !ended else { throw PeerLinkError.notConnected(peer) }
        let id = try core.offerResource(name: name, size: size, sha256: sha, now: Clock.now())
        process()
        defer { refusals[id] = nil }
        while accepted[id] == nil {
            try cancelIfNeeded(id, name)
            if refused.contains(id) { throw refusal(of: id, name) ?? PeerLinkError.resourceDeclined(name) }
            guard !ended else { throw PeerLinkError.notConnected(peer) }
            await waitForChange()
        }
        let start = min(accepted[id] ?? 0, size)
        var sent = start
        var lastReport = UInt64(0)
        func report() {
            progress?(ResourceProgress(peer: peer, name: name, direction: .sending, completed: sent, total: size, resumedFrom: start))
        }
        report()
        // Read ahead in chunks of up to 1 MiB (off this actor), hand them to the core within credit.
        var chunk: [UInt8] = []
        var used = 0
        while sent < size {
            guard !ended else { throw PeerLinkError.notConnected(peer) }
            try cancelIfNeeded(id, name)
            if refused.contains(id) { throw refusal(of: id, name) ?? PeerLinkError.resourceFailed("the receiver cancelled '\(name)'") }
            let credit = core.credit(of: id) ?? 0
            if credit == 0 || core.bulkBacklogBytes > core.config.sendWindow {
                await waitForChange()
                continue
            }
            if used == chunk.count {
                chunk = try await reader.read(at: sent, count: Int(min(UInt64(1 << 20), size - sent)))
                used = 0
                guard !chunk.isEmpty else { throw PeerLinkError.file("\(path) shrank while being sent") }
                continue  // state may have changed while reading
            }
            let n = min(credit, 64 * 1024, chunk.count - used)
            try core.write(chunk[used..<used + n], to: id, now: Clock.now())
            upgrade.bulkActivity(now: Clock.now())
            used += n
            process()
            sent += UInt64(n)
            if sent - lastReport >= 256 * 1024 || sent == size { lastReport = sent; report() }
        }
        core.close(stream: id, cancel: false, now: Clock.now())
        process()
        while results[id] == nil {
            guard !ended else { throw PeerLinkError.notConnected(peer) }
            if refused.contains(id) { throw refusal(of: id, name) ?? PeerLinkError.resourceFailed("the receiver cancelled '\(name)'") }
            await waitForChange()
        }
        let ok = results.removeValue(forKey: id) ?? false
        accepted[id] = nil
        let done = ResourceProgress(peer: peer, name: name, direction: .sending, completed: sent, total: size, resumedFrom: start)
        session.emit(.resourceFinished(done, path: path, error: ok ? nil : "the receiver's SHA-256 check failed"))
        guard ok else { throw PeerLinkError.resourceFailed("the receiver's SHA-256 check of '\(name)' failed") }
    }

    /// The receiver's reason for refusing or stopping resource `id`, if it gave one.
    private func refusal(of id: UInt32, _ name: String) -> PeerLinkError? {
        refusals[id].map { PeerLinkError.resourceRefused(name: name, reason: $0) }
    }

    /// Aborts an outgoing resource when the sending task was cancelled.
    private func cancelIfNeeded(_ id: UInt32, _ name: String) throws {
        guard Task.isCancelled else { return }
        core.close(stream: id, cancel: true, now: Clock.now())
        process()
        throw CancellationError()
    }

    // MARK: incoming resources

    /// Stops receiving a resource; the partial file is kept so a later transfer can resume.
    func cancelIncoming(_ offer: ResourceOffer) {
        if offers.removeValue(forKey: offer.stream) != nil {
            core.close(stream: offer.stream, cancel: true, now: Clock.now())
            process()
        } else if receiving[offer.stream] != nil {
            failResource(offer.stream, "cancelled by the receiver; the partial file is kept to resume")
            process()
        }
    }

    /// Accepts an offer into `directory`, refusing it (and telling the sender why) when the
    /// bytes still to come do not fit in the free space less `keepFree`.
    func acceptResource(_ offer: ResourceOffer, directory: String, keepFree: UInt64) throws {
        guard offers[offer.stream] != nil else { throw PeerLinkError.resourceFailed("no pending offer '\(offer.name)'") }
        let fm = FileManager.default
        let partDir = (directory as NSString).appendingPathComponent(".peerlink-partial")
        do {
            try fm.createDirectory(atPath: partDir, withIntermediateDirectories: true)
        } catch {
            throw PeerLinkError.file("cannot create \(partDir): \(error.localizedDescription)")
        }
        let partPath = (partDir as NSString).appendingPathComponent(FileDigest.hex(offer.sha256) + ".part")
        let writer = try IncomingFileWriter(partPath: partPath, size: offer.size)
        let needed = offer.size - writer.resumedFrom
        // Space other accepted transfers will still write to the same disk is not free.
        let device = DiskSpace.device(of: partDir)
        if let free = DiskSpace.available(at: partDir) {
            let promised = device.map { DiskSpace.pending.promised(on: $0) } ?? 0
            let usable = free > keepFree + promised ? free - keepFree - promised : 0
            if needed > usable {
                writer.discard()
                offers[offer.stream] = nil
                let reason = ResourceError.noSpace(needed: needed, available: usable, margin: keepFree)
                core.refuseResource(offer.stream, error: reason, now: Clock.now())
                process()
                throw PeerLinkError.resourceRefused(name: offer.name, reason: reason)
            }
        }
        offers[offer.stream] = nil
        let have = writer.resumedFrom
        receiving[offer.stream] = IncomingFile(offer: offer, directory: directory, writer: writer,
                                               received: have, resumedFrom: have, lastReported: have,
                                               reservation: device.map { DiskSpace.pending.reserve(needed, on: $0) })
        // A resumed prefix is hashed again before new bytes are written (on the writer's queue).
        let peer = self.peer, session = self.session, name = offer.name, size = offer.size
        writer.hashHeldPrefix { done, _ in
            session.emit(.resourceProgress(ResourceProgress(peer: peer, name: name, direction: .receiving, completed: done,
                                                            total: size, resumedFrom: have, stage: .verifying)))
        }
        try core.acceptResource(offer.stream, offset: have, now: Clock.now())
        process()
        if let f = receiving[offer.stream] { session.emit(.resourceProgress(progress(f))) }
    }

    func declineResource(_ offer: ResourceOffer) {
        guard offers[offer.stream] != nil else { return }
        core.close(stream: offer.stream, cancel: true, now: Clock.now())
        offers[offer.stream] = nil
        process()
    }

    private func progress(_ f: IncomingFile) -> ResourceProgress {
        ResourceProgress(peer: peer, name: f.offer.name, direction: .receiving, completed: f.received, total: f.offer.size, resumedFrom: f.resumedFrom)
    }

    /// Takes received bytes of a file for its writer (handed over at the end of the pass);
    /// credit goes back once they are written, so a slow disk slows the sender.
    private func writeResource(_ id: UInt32, _ bytes: ArraySlice<UInt8>) {
        guard var f = receiving[id] else { return }
        guard f.received + f.queued + UInt64(bytes.count) <= f.offer.size else {
            failResource(id, "the sender sent more than the announced \(f.offer.size) bytes")
            return
        }
        f.queued += UInt64(bytes.count)
        receiving[id] = f
        unwritten[id, default: []].append(bytes)
    }

    /// Hands each file's bytes of this pass to its writer, in order.
    private func flushFileBytes() {
        guard !unwritten.isEmpty else { return }
        let batches = unwritten
        unwritten.removeAll()
        for (id, parts) in batches {
            guard let f = receiving[id] else { continue }
            let count = parts.reduce(0) { $0 + $1.count }
            let hold = IncomingFileWriter.Hooks.holdCompletion()
            f.writer.write(parts) { [weak self] result in
                Task {
                    if hold > 0 { try? await Task.sleep(nanoseconds: hold) }
                    await self?.written(id, count, result)
                }
            }
        }
    }

    private func written(_ id: UInt32, _ count: Int, _ result: Result<UInt64, IncomingFileWriter.Failure>) {
        guard var f = receiving[id] else { return }
        switch result {
        case .success:
            // Completions come back through separate tasks, so they may run out of order:
            // count what each one wrote rather than trusting the latest `held` (which may
            // include bytes whose own completion, still counted in `queued`, has not run).
            f.queued -= UInt64(count)
            f.reservation?.wrote(UInt64(count))
            f.received += UInt64(count)
            receiving[id] = f
            if f.received - f.lastReported >= 256 * 1024 || f.received == f.offer.size {
                receiving[id]?.lastReported = f.received
                session.emit(.resourceProgress(progress(f)))
            }
            core.consumed(count, of: id, now: Clock.now())
        case let .failure(.diskFull(held)):
            receiving[id]?.received = held
            failResource(id, "the disk is full after \(ByteCount.text(held)) of \(ByteCount.text(f.offer.size)); the partial file is kept to resume",
                         telling: .diskFull(held: held, size: f.offer.size))
        case let .failure(.failed(held, reason)):
            receiving[id]?.received = held
            failResource(id, "\(reason); the partial file is kept to resume",
                         telling: .writeFailed(held: held, size: f.offer.size, reason: reason))
        }
        process()
    }

    private func failResource(_ id: UInt32, _ why: String, telling reason: ResourceError? = nil) {
        flushFileBytes()  // what arrived before the failure is kept for a resume
        guard let f = receiving.removeValue(forKey: id) else { return }
        f.writer.close()
        if let reason { core.refuseResource(id, error: reason, now: Clock.now()) } else { core.close(stream: id, cancel: true, now: Clock.now()) }
        session.emit(.resourceFinished(progress(f), path: nil, error: why))
    }

    private func finishResource(_ id: UInt32, status: StreamCloseStatus) {
        guard let f = receiving[id] else { return }
        guard status == .finished else {
            receiving[id] = nil
            f.writer.close()
            session.emit(.resourceFinished(progress(f), path: nil, error: "cancelled by the sender; the partial file is kept to resume"))
            return
        }
        // Every byte is hashed as it is written: verifying is a comparison, off this actor.
        f.writer.finish(sha256: f.offer.sha256, directory: f.directory, name: f.offer.name) { [weak self] result in
            Task { await self?.verified(id, result) }
        }
    }

    private func verified(_ id: UInt32, _ result: Result<String, PeerLinkError>) {
        guard var f = receiving.removeValue(forKey: id) else { return }
        switch result {
        case let .success(path):
            f.received = f.offer.size
            core.finishResource(id, ok: true, now: Clock.now())
            session.emit(.resourceFinished(progress(f), path: path, error: nil))
        case let .failure(e):
            core.finishResource(id, ok: false, now: Clock.now())
            session.emit(.resourceFinished(progress(f), path: nil, error: "\(e)"))
        }
        process()
    }

    // MARK: streams

    func openStream(name: String) throws -> OutgoingStream {
        guard !ended else { throw PeerLinkError.notConnected(peer) }
        let id = try core.openStream(name: name, now: Clock.now())
        bulkStarting("stream '\(name)'")
        process()
        return OutgoingStream(peer: peer, name: name, id: id, channel: self)
    }

    func writeStream(_ id: UInt32, _ bytes: [UInt8]) async throws {
        var offset = 0
        while offset < bytes.count {
            guard !ended else { throw PeerLinkError.notConnected(peer) }
            if refused.contains(id) { throw PeerLinkError.resourceFailed("the receiver cancelled the stream") }
            guard let credit = core.credit(of: id) else { throw PeerLinkError.resourceFailed("stream \(id) is closed") }
            if credit == 0 || core.bulkBacklogBytes > core.config.sendWindow {
                await waitForChange()
                continue
            }
            let n = min(credit, bytes.count - offset)
            try core.write(bytes[offset..<offset + n], to: id, now: Clock.now())
            offset += n
            process()
        }
    }

    func closeStream(_ id: UInt32, cancel: Bool) {
        core.close(stream: id, cancel: cancel, now: Clock.now())
        process()
    }

    func cancelStream(_ id: UInt32) {
        incomingStreams.removeValue(forKey: id)?.buffer.finish()
        core.close(stream: id, cancel: true, now: Clock.now())
        process()
    }

    func consumed(_ n: Int, of id: UInt32) {
        core.consumed(n, of: id, now: Clock.now())
        process()
    }

    // MARK: observation

    /// What `peerlink links` lists for a link that gets copies of the reliable messages.
    static let copyRole = "reliable-copy"

    func snapshot() -> PeerLinks {
        let now = Clock.now()
        let list = links.values.sorted { $0.id < $1.id }.map { l in
            var roles = LinkRole.allCases.filter { carrier(of: $0) == l.id }.map { ($0.rawValue, reason(for: $0, on: l.id)) }
            if core.copyLink == l.id { roles.append((Self.copyRole, choice.messageCopyReason ?? "copy of reliable messages")) }
            let st = core.stats(of: l.id, now: now)
            let why = roles.isEmpty
                ? (suspectReason[l.id].map { "suspected: \($0)" } ?? "standby (\(session.policy.kind.rawValue) prefers other links)")
                : roles.map { "\($0.0): \($0.1)" }.joined(separator: "; ")
            return LinkSnapshot(id: l.id, medium: l.medium, remote: l.connection.remoteDescription, datagram: l.datagramDescription,
                                rttMillis: st?.rttMillis, loss: st?.loss ?? 0, throughput: st?.throughput,
                                state: st?.suspect == true ? "suspected" : "up",
                                carries: roles.map(\.0),
                                reasons: Dictionary(uniqueKeysWithValues: roles),
                                reason: why)
        }
        return PeerLinks(peer: peer, displayName: displayName, state: state, links: list, upgrades: upgradeHistory)
    }
}

extension PeerChannel {
    /// The channel's state in one line, for diagnosing a transfer that does not progress.
    func debugState() -> String {
        let inbound = receiving.map {
            "\($0.key): \($0.value.received)+\($0.value.queued)/\($0.value.offer.size) window \(core.window(of: $0.key) ?? 0)"
        }
        return "peer \(peer.short) ended=\(ended) links=\(links.keys.sorted()) waiters=\(waiters.count) "
            + "accepted=\(accepted) results=\(results) refused=\(refused) offers=\(offers.keys.sorted()) receiving=\(inbound) "
            + "unacked=\(core.unacknowledgedBytes) bulkBacklog=\(core.bulkBacklogBytes) ackPaused=\(core.acknowledgementsPaused) "
            + "fragment=\(core.fragmentSize)/\(core.bulkFragmentSize)"
    }

    /// The sizes of the pieces this channel cuts messages, and bulk bytes, queued now into (tests).
    var fragmentSizes: (messages: Int, bulk: Int) { (core.fragmentSize, core.bulkFragmentSize) }
}
