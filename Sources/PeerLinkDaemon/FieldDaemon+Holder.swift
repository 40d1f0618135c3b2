import Foundation
import PeerLink
import PeerLinkStore
import PeerLinkWire

/// The holder's side: items queued from the outbox, announced to their peer, sent when asked,
/// settled on the peer's receipt.
extension FieldDaemon {
    /// Most items announced to one peer and not yet answered: the rest wait, in priority order.
    static let announceWindow = 4

    /// Runs a ledger call on the blocking pool (each commit is an fsync).
    func db<T: Sendable>(_ body: @escaping @Sendable (Ledger) throws -> T) async throws -> T {
        let ledger = self.ledger
        return try await Runtime.offload("pl.ledger") { try body(ledger) }
    }

    /// Queues every complete file in the outbox that the ledger does not hold yet.
    func scanOutbox() async {
        let trusted = parts.trust.trustedPeers()
        let (entries, problems) = OutboxScan.scan(config.outbox, trusted: trusted, seen: Set(found.keys), naming: naming)
        for p in problems where reportedFolders.insert(p.folder).inserted {
            log.warning("outbox folder skipped", metadata: ["folder": "\(p.folder)", "why": "\(p.reason)"])
        }
        let ttl = Duration.seconds(config.ttlSeconds), now = clock()
        for e in entries where !submitting.contains(e.path) {
            do {
                let outcome = try await db { try $0.enqueue(id: e.id, for: e.peer, payload: .file(path: e.path), ttl: ttl, now: now) }
                if case .added = outcome {
                    log.info("queued", metadata: ["item": "\(e.id)", "peer": "\(e.peer)", "file": "\(e.path)", "size": "\(e.size)"])
                    events.publish(.itemQueued, peer: e.peer.description, item: e.id.description, path: e.path, size: e.size)
                    inviteIfWorkWaits(e.peer)
                }
            } catch {
                log.warning("could not queue an outbox file", metadata: ["file": "\(e.path)", "error": "\(error)"])
                metrics.error(.outbox)
            }
        }
    }

    /// Moves lapsed items aside (`expired/`, with the reason) and says so.
    func expireItems() async {
        let now = clock()
        do {
            for item in try await db({ try $0.expire(now: now) }) {
                log.warning("expired before its peer came", metadata: ["item": "\(item.id)", "peer": "\(item.peer)",
                                                                       "why": "\(item.reason ?? "time to live passed")"])
                events.publish(.itemExpired, peer: item.peer.description, item: item.id.description, path: item.archivedPath,
                               size: item.size, reason: item.reason ?? "time to live passed")
            }
        } catch {
            log.error("could not expire items", metadata: ["error": "\(error)"])
            metrics.error(.ledger)
        }
    }

    /// Announces the next items for `peer`, up to the window.
    func announce(to peer: PeerID) async {
        guard linked.contains(peer) else { return }
        let now = clock()
        // Announcements left unanswered too long go again (unless their bytes are moving).
        for id in announced[peer] ?? [] where transfers[id] == nil {
            if let at = announcedAt[id], at + timing.answerTimeout <= now {
                announced[peer]?.remove(id)
                log.notice("no answer from the peer; announcing the item again", metadata: ["item": "\(id)", "peer": "\(peer)"])
            }
        }
        let room = Self.announceWindow - (announced[peer]?.count ?? 0)
        guard room > 0 else { return }
        let skip = announced[peer] ?? []
        guard let items = try? await db({ try $0.nextItems(for: peer, limit: Self.announceWindow + skip.count, now: now) }) else { return }
        for item in items.filter({ !skip.contains($0.id) && !self.isResting($0.id) }).prefix(room) {
            let expires = UInt64(max(0, item.expires.millisecondsSince1970))
            let path: String
            switch item.payload {
            case let .message(bytes):
                announced[peer, default: []].insert(item.id)
                announcedAt[item.id] = now
                await send(.message(id: item.id.bytes, expiresAt: expires, bytes: bytes), to: peer)
                continue
            case let .file(p):
                path = p
            }
            let digest: [UInt8]
            do {
                let (size, sha) = try await FileDigest.sha256(ofFileAt: path)
                guard size == item.size else { throw PeerLinkError.file(FileFailure(path: path, .changedSize(from: item.size, to: size, during: .queued))) }
                digest = sha
            } catch {
                log.error("item cannot be sent", metadata: ["item": "\(item.id)", "file": "\(path)", "error": "\(error)"])
                metrics.error(.outbox)
                if (try? await db({ try $0.markFailed(item.id, reason: "\(error)", now: now) })) != nil {
                    events.publish(.itemFailed, peer: peer.description, item: item.id.description, size: item.size, reason: "\(error)")
                }
                continue
            }
            announced[peer, default: []].insert(item.id)
            announcedAt[item.id] = now
            await send(.item(id: item.id.bytes, size: item.size, digest: digest, expiresAt: expires,
                             name: (path as NSString).lastPathComponent), to: peer)
        }
    }

    /// The peer holds the item: settle it (moved to `sent/` with the receipt).
    func peerHas(_ raw: [UInt8], size: UInt64, digest: [UInt8], at receivedAt: UInt64, peer: PeerID) async {
        guard let id = ItemID(bytes: raw), let item = try? await db({ try $0.item(id) }), item.peer == peer else { return }
        announced[peer]?.remove(id)
        announcedAt[id] = nil
        guard item.state.isPending else { return }
        let receipt = DeliveryReceipt(itemID: id, size: size, digest: ContentDigest.hex(digest),
                                      receivedAt: Timestamp(millisecondsSince1970: Int64(clamping: receivedAt)))
        let now = clock()
        do {
            _ = try await db { try $0.markDelivered(id, receipt: receipt, now: now) }
            log.info("delivered", metadata: ["item": "\(id)", "peer": "\(peer)", "size": "\(size)"])
            events.publish(.itemDelivered, peer: peer.description, item: id.description, size: size)
        } catch {
            log.error("could not record a delivery", metadata: ["item": "\(id)", "error": "\(error)"])
            metrics.error(.ledger)
        }
        await announce(to: peer)
    }

    /// The peer asked for the item: send it as a resource named by its ID (resumed from what
    /// the peer holds), or a message's record again. The item settles only on the peer's
    /// receipt. A peer asks unprompted for an item it refused for want of space once it fits:
    /// the item rests no longer.
    func peerWants(_ raw: [UInt8], peer: PeerID) async {
        guard let id = ItemID(bytes: raw), transfers[id] == nil,
              let item = try? await db({ try $0.item(id) }), item.peer == peer, item.state.isPending else { return }
        resting[id] = nil
        let path: String
        switch item.payload {
        case let .message(bytes):
            announced[peer, default: []].insert(id)
            announcedAt[id] = clock()
            await send(.message(id: id.bytes, expiresAt: UInt64(max(0, item.expires.millisecondsSince1970)), bytes: bytes), to: peer)
            return
        case let .file(p):
            path = p
        }
        guard transfers[id] == nil else { return }
        let session = self.session, log = self.log
        transfers[id] = Task {
            do {
                // The receiving daemon matches the offer's SHA-256 with the item it was told
                // of, so the offer carries it: hashed once per content (cached), not after the
                // bytes as a plain send to a new peer would.
                try await session.prepareToSend(fileAt: path)
                try await session.sendResource(at: path, name: id.description, to: peer)
                log.debug("item's bytes verified by the peer; waiting for its receipt", metadata: ["item": "\(id)"])
            } catch {
                log.notice("item transfer stopped; it resumes when the peer is back", metadata: ["item": "\(id)", "peer": "\(peer)", "error": "\(error)"])
            }
            self.transferEnded(id, peer: peer)
        }
    }

    func transferEnded(_ id: ItemID, peer: PeerID) {
        transfers[id] = nil
        // Announced again at the next tick when it is still pending: the peer answers HAVE
        // if it recorded it meanwhile, WANT (resuming) otherwise.
        announced[peer]?.remove(id)
    }

    /// The peer will not take the item now: an expired one is given up, the others rest a while.
    func peerRefused(_ raw: [UInt8], reason: StoreForwardRecord.RefuseReason, text: String, peer: PeerID) async {
        guard let id = ItemID(bytes: raw) else { return }
        announced[peer]?.remove(id)
        if reason == .expired {
            let now = clock()
            if let item = try? await db({ try $0.markFailed(id, reason: "the peer refused it as expired: \(text)", now: now) }) {
                events.publish(.itemFailed, peer: peer.description, item: id.description, size: item.size, reason: item.reason)
            }
            log.warning("peer refused an expired item", metadata: ["item": "\(id)", "peer": "\(peer)", "why": "\(text)"])
        } else {
            // On the monotonic clock: a wall clock set back (NTP after a boot without an RTC,
            // an owner fixing the date) must not stretch the rest.
            resting[id] = uptime + timing.refusalRest.inSeconds
            log.notice("peer refused an item for now; trying again later", metadata: ["item": "\(id)", "peer": "\(peer)", "why": "\(text)",
                                                                                     "retryIn": "\(timing.refusalRest)"])
        }
    }

    /// Whether the peer refused `id` for now less than `refusalRest` ago (monotonic time).
    func isResting(_ id: ItemID) -> Bool {
        guard let until = resting[id] else { return false }
        if until <= uptime { resting[id] = nil; return false }
        return true
    }
}
