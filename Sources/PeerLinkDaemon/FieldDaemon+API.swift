import Foundation
import PeerLink
import PeerLinkStore
import PeerLinkWire

/// What the local API (docs/API.md) reads from and asks of the daemon.
extension FieldDaemon: DaemonAPIBackend {
    public nonisolated var trustStore: IdentityStore { parts.trust }

    public func apiStatus() async throws -> DaemonStatus {
        let counts = try await db { ledger in
            Dictionary(grouping: try ledger.items(in: Set(OutboundItem.State.allCases)), by: \.state).mapValues(\.count)
        }
        return DaemonStatus(peer: node.peerID.description, name: node.displayName, service: config.service,
                            uptimeSeconds: uptime - startedAt,
                            peers: peerNames.sorted { $0.key < $1.key }.map { .init(peer: $0.key.description, name: $0.value) },
                            items: counts, inbox: config.inbox, outbox: config.outbox)
    }

    public nonisolated func apiItems(in states: Set<OutboundItem.State>) async throws -> [OutboundItem] {
        let ledger = self.ledger
        return try await Runtime.offload("pl.api.items") { try ledger.items(in: states) }
    }

    /// Copies the file into `OUTBOX/<peer ID>/` under a temporary name, renames it to its own
    /// name (made unique) and queues it in the ledger with the ID the outbox scan would give
    /// it, so the two never make two items of one file. The daemon owns the copy: the
    /// caller's file may change or go at once; the copy moves to `sent/` when delivered.
    public func apiSubmit(_ s: ItemSubmission, caller: PeerCredentials) async throws(APIError) -> OutboundItem {
        let peer: PeerID
        let known = Set(found.keys).union(peerNames.keys)
        switch OutboxScan.resolve(s.peer, trusted: parts.trust.trustedPeers(), known: known) {
        case let .success(p): peer = p
        case let .failure(why): throw APIError(422, "unknown_peer", why.text)
        }
        if let message = s.message { return try await submitMessage(message, for: peer, s) }
        let source = try FileAccess.readableFile(s.path, by: caller).get()
        let folder = (config.outbox as NSString).appendingPathComponent(peer.description)
        let name = (source.path as NSString).lastPathComponent
        let temp = (folder as NSString).appendingPathComponent(".api-\(ItemID.random()).tmp")
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw APIError(500, "outbox", "cannot create \(folder): \(error.localizedDescription)")
        }
        let copied = await Runtime.offload("pl.api.copy") { () -> APIError? in
            do { try FileAccess.copy(source, to: temp); return nil } catch let e as APIError { return e } catch { return APIError(500, "copy", "\(error)") }
        }
        if let copied { throw copied }
        let final = Self.freeName(name, in: folder)
        submitting.insert(final)
        defer { submitting.remove(final) }
        var st = stat()
        guard rename(temp, final) == 0, stat(final, &st) == 0 else {
            let e = errno
            unlink(temp)
            throw APIError(500, "outbox", "cannot place the copy at \(final): \(String(cString: strerror(e)))")
        }
        DurableDirectory.sync(folder)
        let id = naming == .fileIdentity ? OutboxScan.itemID(peer: peer, path: final, st)
            : OutboxScan.itemID(peer: peer, name: peer.description + "/" + (final as NSString).lastPathComponent, size: UInt64(st.st_size))
        let ttl = Duration.seconds(s.ttlSeconds ?? config.ttlSeconds), now = clock(), priority = s.priority
        let item: OutboundItem
        do {
            item = try await db { try $0.enqueue(id: id, for: peer, payload: .file(path: final), priority: priority, ttl: ttl, now: now) }.item
        } catch {
            unlink(final)
            throw APIError(500, "ledger", "could not queue the item: \(error)")
        }
        log.info("queued", metadata: ["item": "\(id)", "peer": "\(peer)", "file": "\(final)", "size": "\(item.size)", "via": "api"])
        events.publish(.itemQueued, peer: peer.description, item: id.description, path: final, size: item.size)
        inviteIfWorkWaits(peer)
        return item
    }

    /// Queues a message item: the ledger keeps its bytes, a fresh ID names it.
    func submitMessage(_ bytes: [UInt8], for peer: PeerID, _ s: ItemSubmission) async throws(APIError) -> OutboundItem {
        let id = ItemID.random(), ttl = Duration.seconds(s.ttlSeconds ?? config.ttlSeconds), now = clock(), priority = s.priority
        let item: OutboundItem
        do {
            item = try await db { try $0.enqueue(id: id, for: peer, payload: .message(bytes), priority: priority, ttl: ttl, now: now) }.item
        } catch {
            throw APIError(500, "ledger", "could not queue the message: \(error)")
        }
        log.info("queued", metadata: ["item": "\(id)", "peer": "\(peer)", "message": "\(bytes.count) bytes", "via": "api"])
        events.publish(.itemQueued, peer: peer.description, item: id.description, size: item.size)
        inviteIfWorkWaits(peer)
        return item
    }

    /// `name` in `folder`, or `name-2`, `name-3`… (before the extension) when taken.
    static func freeName(_ name: String, in folder: String) -> String {
        let base = (name as NSString).deletingPathExtension, ext = (name as NSString).pathExtension
        var candidate = (folder as NSString).appendingPathComponent(name)
        var n = 2
        while FileManager.default.fileExists(atPath: candidate) {
            candidate = (folder as NSString).appendingPathComponent("\(base)-\(n)" + (ext.isEmpty ? "" : ".\(ext)"))
            n += 1
        }
        return candidate
    }
}

/// fsync of a directory, so a rename in it survives a power cut.
enum DurableDirectory {
    static func sync(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }
}
