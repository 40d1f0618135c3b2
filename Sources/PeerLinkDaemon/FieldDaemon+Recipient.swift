import Crypto
import Foundation
import PeerLink
import PeerLinkStore
import PeerLinkWire

/// The recipient's side: items announced by a holder, asked for, received into the staging
/// folder, landed in the inbox by the ledger, acknowledged with a receipt.
extension FieldDaemon {
    /// How long a record of an item taken outlives the item's own expiry (clocks of two
    /// machines in a field differ).
    static let recordMargin: Duration = .seconds(86400)

    /// Whether items and files from `peer` are taken, by the `accept` rule.
    func takesFrom(_ peer: PeerID) -> Bool {
        config.accept == .all || parts.trust.trustedPeers()[peer] != nil
    }

    /// Bytes of `peer`'s items in the inbox now (landed and not taken away). One look at the
    /// disk per record the ledger keeps for the peer, off the actor.
    func inboxBytes(of peer: PeerID) async -> UInt64 {
        let inbox = config.inbox
        return (try? await db { ledger in
            try ledger.records(from: peer).reduce(UInt64(0)) { sum, r in
                guard r.landed, let name = r.name,
                      FileManager.default.fileExists(atPath: (inbox as NSString).appendingPathComponent(name)) else { return sum }
                return sum + r.size
            }
        }) ?? 0
    }

    func stagingFolder(of peer: PeerID) -> String { (staging as NSString).appendingPathComponent(peer.description) }

    /// The answers every announced item gets before its bytes: HAVE when it was recorded
    /// before, REFUSE when it expired, its holder is not trusted or it would go over the quota.
    /// Returns true when none applies (the item is to be taken).
    func admits(_ raw: [UInt8], key: ItemID, size: UInt64, expiresAt: UInt64, from peer: PeerID) async -> Bool {
        if let r = try? await db({ try $0.record(key) }), r.landed {
            await send(.have(id: raw, size: r.size, digest: r.digest, receivedAt: UInt64(max(0, r.received.millisecondsSince1970))), to: peer)
            return false
        }
        if Int64(clamping: expiresAt) < clock().millisecondsSince1970 {
            await send(.refuse(id: raw, reason: .expired, text: "its time to live passed before it arrived"), to: peer)
            return false
        }
        guard takesFrom(peer) else {
            await send(.refuse(id: raw, reason: .notAccepted, text: "not in this node's trust store"), to: peer)
            return false
        }
        let held = await inboxBytes(of: peer)
        guard held + size <= config.quota else {
            await send(.refuse(id: raw, reason: .quota, text: "quota: \(ConfigValues.bytesText(held)) of \(ConfigValues.bytesText(config.quota)) held for this peer"), to: peer)
            return false
        }
        return true
    }

    /// Whether an item's bytes fit on the inbox's disk now, keeping `keep_free` free (the check
    /// the transfer's offer meets, made before asking for it). When they do not, the holder is
    /// told (REFUSE, no space: it keeps the item and tries again later) and the item waits
    /// here to be asked for as soon as it fits (`askForItemsThatFitNow`).
    func fits(_ record: StoreForwardRecord, id: ItemID, size: UInt64, sha256: [UInt8], into directory: String,
              from peer: PeerID) async -> Bool {
        guard let refusal = Session.spaceRefusal(forReceiving: size, sha256: sha256, into: directory, keepingFree: config.keepFree) else {
            waitingForSpace[peer]?[id] = nil
            return true
        }
        let why = Self.noSpaceText(refusal, keepFree: config.keepFree)
        if waitingForSpace[peer, default: [:]].updateValue(record, forKey: id) == nil {
            log.notice("item refused for now: it does not fit in the inbox; asking for it once it does",
                       metadata: ["item": "\(id)", "peer": "\(peer)", "size": "\(size)", "why": "\(why)"])
        }
        await send(.refuse(id: id.bytes, reason: .noSpace, text: why), to: peer)
        return false
    }

    /// Why an item does not fit, in the configuration's words (`keep_free`).
    static func noSpaceText(_ refusal: ResourceError, keepFree: UInt64) -> String {
        guard case let .noSpace(needed, available, _) = refusal else { return "\(refusal)" }
        return "no space in the inbox: \(ConfigValues.bytesText(needed)) needed, \(ConfigValues.bytesText(available)) free "
            + "beyond keep_free (\(ConfigValues.bytesText(keepFree)))"
    }

    /// Asks the holders for the items refused for want of space that fit now, each counted
    /// against the space of those asked for before it.
    func askForItemsThatFitNow() async {
        for (peer, items) in waitingForSpace where linked.contains(peer) {
            var promised: UInt64 = 0
            for (id, record) in items.sorted(by: { $0.key.description < $1.key.description }) {
                let size: UInt64, digest: [UInt8], directory: String
                switch record {
                case let .item(_, s, d, _, _): (size, digest, directory) = (s, d, stagingFolder(of: peer))
                case let .message(_, _, bytes): (size, digest, directory) = (UInt64(bytes.count), Array(SHA256.hash(data: bytes)), config.inbox)
                default: continue
                }
                let keep = config.keepFree.addingReportingOverflow(promised)
                guard !keep.overflow,
                      Session.spaceRefusal(forReceiving: size, sha256: digest, into: directory, keepingFree: keep.partialValue) == nil else { continue }
                promised += size
                waitingForSpace[peer]?[id] = nil
                if case .item = record { wanted[peer, default: [:]][id] = record }
                log.info("the item fits in the inbox now; asking for it", metadata: ["item": "\(id)", "peer": "\(peer)", "size": "\(size)"])
                await send(.want(id: id.bytes), to: peer)
            }
            if waitingForSpace[peer]?.isEmpty == true { waitingForSpace[peer] = nil }
        }
    }

    func itemAnnounced(_ record: StoreForwardRecord, by peer: PeerID) async {
        guard case let .item(raw, size, digest, expiresAt, _) = record, let id = ItemID(bytes: raw),
              digest.count == StoreForwardRecord.digestSize else { return }
        let key = ItemID.received(id, from: peer)
        guard await admits(raw, key: key, size: size, expiresAt: expiresAt, from: peer) else { return }
        // Bytes that verified before a restart wait in the staging folder: land them now.
        let staged = (stagingFolder(of: peer) as NSString).appendingPathComponent(id.description)
        if FileManager.default.fileExists(atPath: staged) {
            _ = rename(staged, ledger.partialFile(for: key))
        }
        if ledger.partialBytes(for: key) == size {
            await land(id, record, from: peer)
            return
        }
        guard await fits(record, id: id, size: size, sha256: digest, into: stagingFolder(of: peer), from: peer) else { return }
        wanted[peer, default: [:]][id] = record
        await send(.want(id: raw), to: peer)
    }

    /// An offer: an item this node asked for goes to the staging folder; another file is
    /// taken into the inbox when the `accept` rule and the quota allow.
    func offered(_ offer: ResourceOffer) async {
        if let id = ItemID(hex: offer.name), let record = wanted[offer.peer]?[id] {
            guard case let .item(_, size, digest, _, _) = record, size == offer.size, digest == offer.sha256 else {
                log.warning("an item's offer does not match its announcement; declined", metadata: ["item": "\(id)", "peer": "\(offer.peer)"])
                await session.decline(offer)
                return
            }
            await accept(offer, into: stagingFolder(of: offer.peer))
            return
        }
        guard takesFrom(offer.peer) else {
            log.notice("file declined: peer not in the trust store", metadata: ["peer": "\(offer.peer)", "name": "\(offer.name)"])
            await session.decline(offer)
            return
        }
        let held = await inboxBytes(of: offer.peer)
        guard held + offer.size <= config.quota else {
            log.notice("file declined: over the peer's quota", metadata: ["peer": "\(offer.peer)", "name": "\(offer.name)", "size": "\(offer.size)"])
            await session.decline(offer)
            return
        }
        await accept(offer, into: config.inbox)
    }

    private func accept(_ offer: ResourceOffer, into directory: String) async {
        do {
            try await session.accept(offer, into: directory, keepingFree: config.keepFree)
        } catch {
            log.notice("offer refused", metadata: ["peer": "\(offer.peer)", "name": "\(offer.name)", "why": "\(error)"])
        }
    }

    /// A resource ended on this side: an item's bytes land through the ledger; a plain file
    /// is already in the inbox.
    func received(_ p: ResourceProgress, path: String?, error: ResourceFailure?) async {
        guard let id = ItemID(hex: p.name), let record = wanted[p.peer]?[id] else {
            if let path {
                log.info("file received", metadata: ["peer": "\(p.peer)", "path": "\(path)", "size": "\(p.total)"])
                events.publish(.fileReceived, peer: p.peer.description, path: path, size: p.total)
                runOnReceive(path: path, peer: p.peer, item: nil)
            } else {
                log.notice("file not received", metadata: ["peer": "\(p.peer)", "name": "\(p.name)", "why": "\(error.map(String.init(describing:)) ?? "unknown")"])
            }
            return
        }
        guard let path else {
            log.notice("item transfer stopped; the partial file is kept to resume", metadata: ["item": "\(id)", "peer": "\(p.peer)", "why": "\(error.map(String.init(describing:)) ?? "unknown")"])
            return
        }
        let key = ItemID.received(id, from: p.peer)
        guard rename(path, ledger.partialFile(for: key)) == 0 else {
            log.error("could not move a received item to the inbox", metadata: ["item": "\(id)", "path": "\(path)", "errno": "\(errno)"])
            metrics.error(.inbox)
            return
        }
        await land(id, record, from: p.peer)
    }

    /// Lands the item's complete partial file and sends the receipt.
    /// A message item: recorded and delivered into the inbox as `message-<id>.txt` (through the
    /// same landing as files), then acknowledged.
    func messageArrived(_ record: StoreForwardRecord, from peer: PeerID) async {
        guard case let .message(raw, expiresAt, bytes) = record, let id = ItemID(bytes: raw) else { return }
        let key = ItemID.received(id, from: peer)
        guard await admits(raw, key: key, size: UInt64(bytes.count), expiresAt: expiresAt, from: peer) else { return }
        let digest = Array(SHA256.hash(data: bytes))
        guard await fits(record, id: id, size: UInt64(bytes.count), sha256: digest, into: config.inbox, from: peer) else { return }
        let part = ledger.partialFile(for: key)
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: part))
        } catch {
            log.error("could not write a message to the inbox", metadata: ["item": "\(id)", "error": "\(error)"])
            return
        }
        await land(id, raw: raw, name: "message-\(id.description.prefix(8)).txt", size: UInt64(bytes.count), digest: digest,
                   expiresAt: expiresAt, from: peer, message: true)
    }

    func land(_ id: ItemID, _ record: StoreForwardRecord, from peer: PeerID) async {
        guard case let .item(raw, size, digest, expiresAt, name) = record else { return }
        await land(id, raw: raw, name: name, size: size, digest: digest, expiresAt: expiresAt, from: peer, message: false)
    }

    func land(_ id: ItemID, raw: [UInt8], name: String, size: UInt64, digest: [UInt8], expiresAt: UInt64, from peer: PeerID,
              message: Bool) async {
        wanted[peer]?[id] = nil
        let key = ItemID.received(id, from: peer), now = clock()
        let keep = Timestamp(millisecondsSince1970: Int64(clamping: expiresAt)) + Self.recordMargin
        do {
            let outcome = try await db { try $0.land(key, from: peer, name: name, size: size, digest: digest, keepUntil: keep, now: now) }
            let r = outcome.record
            if case let .new(_, path?) = outcome {
                log.info(message ? "message received" : "item received", metadata: ["item": "\(id)", "peer": "\(peer)", "path": "\(path)", "size": "\(size)"])
                events.publish(message ? .messageReceived : .itemReceived, peer: peer.description, item: id.description, path: path, size: size)
                runOnReceive(path: path, peer: peer, item: id)
            }
            await send(.have(id: raw, size: r.size, digest: r.digest, receivedAt: UInt64(max(0, r.received.millisecondsSince1970))), to: peer)
        } catch {
            log.error("item did not land; the holder will offer it again", metadata: ["item": "\(id)", "peer": "\(peer)", "error": "\(error)"])
            metrics.error(.ledger)
        }
    }

    /// Runs `on_receive` for a delivered file (not waited for; its exit is logged).
    func runOnReceive(path: String, peer: PeerID, item: ItemID?) {
        guard let argv = config.onReceive, let program = argv.first else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = Array(argv.dropFirst())
        var env = ProcessInfo.processInfo.environment
        env["PEERLINK_FILE"] = path
        env["PEERLINK_PEER"] = peer.description
        env["PEERLINK_ITEM"] = item?.description ?? ""
        process.environment = env
        let log = self.log
        process.terminationHandler = { p in
            if p.terminationStatus != 0 {
                log.warning("on_receive failed", metadata: ["file": "\(path)", "status": "\(p.terminationStatus)"])
                self.metrics.error(.onReceive)
            }
        }
        do {
            try process.run()
        } catch {
            log.error("could not run on_receive", metadata: ["program": "\(program)", "error": "\(error)"])
            metrics.error(.onReceive)
        }
    }
}
