import Foundation
import PeerLinkWire

/// The sender's side: enqueue, pick, progress, and the three final states.
extension LedgerCore {
    func enqueue(id: ItemID, peer: PeerID, payload: OutboundItem.Payload, priority: Int, ttl: Duration,
                 now: Timestamp) throws -> EnqueueOutcome {
        if let existing = try item(id) {
            guard existing.peer == peer, existing.payload == payload else { throw LedgerError.conflictingItem(id) }
            return .existing(existing)
        }
        let size: UInt64
        var path: String?
        var message: [UInt8]?
        switch payload {
        case let .file(p):
            guard let identity = DurableFile.identity(p), DurableFile.isRegularFile(p) else { throw LedgerError.payloadMissing(p) }
            size = identity.size
            path = p
        case let .message(bytes):
            size = UInt64(bytes.count)
            message = bytes
        }
        try db.write { db in
            try db.run("""
                INSERT INTO outbound (id, peer, kind, path, message, size, priority, created_ms, expires_ms, state)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued')
                """, id.bytes, peer.description, payload.kind.rawValue, path, message, Int64(size), priority,
                now.millisecondsSince1970, (now + ttl).millisecondsSince1970)
        }
        CrashPoint.hit(CrashPoint.enqueueAfterInsert)
        return .added(try existingItem(id))
    }

    func nextItems(for peer: PeerID, limit: Int, now: Timestamp) throws -> [OutboundItem] {
        try db.query("""
            SELECT \(Self.outboundColumns) FROM outbound
            WHERE peer = ? AND state IN ('queued', 'sending') AND expires_ms > ?
            ORDER BY priority DESC, created_ms ASC, id ASC LIMIT ?
            """, peer.description, now.millisecondsSince1970, limit, map: outbound)
    }

    func items(states: Set<OutboundItem.State>) throws -> [OutboundItem] {
        try db.query("SELECT \(Self.outboundColumns) FROM outbound ORDER BY created_ms, id", map: outbound)
            .filter { states.contains($0.state) }
    }

    func recordProgress(_ id: ItemID, acknowledged: UInt64) throws -> OutboundItem {
        let item = try existingItem(id)
        guard item.state.isPending else { throw LedgerError.notPending(id, item.state) }
        try db.write { db in
            try db.run("UPDATE outbound SET state = 'sending', acked = ? WHERE id = ?",
                       Int64(min(acknowledged, item.size)), id.bytes)
        }
        CrashPoint.hit(CrashPoint.progressAfterCommit)
        return try existingItem(id)
    }

    /// Marks the item delivered with its receipt, then moves its payload aside. Delivering an
    /// already delivered item again returns it unchanged.
    func markDelivered(_ id: ItemID, receipt: DeliveryReceipt, now: Timestamp) throws -> OutboundItem {
        let item = try existingItem(id)
        if item.state == .delivered { return item }
        guard item.state.isPending else { throw LedgerError.notPending(id, item.state) }
        let json = try String(decoding: JSONEncoder().encode(receipt), as: UTF8.self)
        try db.write { db in
            try db.run("UPDATE outbound SET state = 'delivered', receipt = ?, acked = size, settled = 0 WHERE id = ?",
                       json, id.bytes)
        }
        CrashPoint.hit(CrashPoint.deliverAfterMark)
        return try settle(try existingItem(id), now: now)
    }

    func markFailed(_ id: ItemID, reason: String, now: Timestamp) throws -> OutboundItem {
        let item = try existingItem(id)
        guard item.state.isPending else { throw LedgerError.notPending(id, item.state) }
        try db.write { db in
            try db.run("UPDATE outbound SET state = 'failed', reason = ?, settled = 0 WHERE id = ?", reason, id.bytes)
        }
        return try settle(try existingItem(id), now: now)
    }

    /// Every pending item whose time to live has passed at `now` becomes `expired`, with its
    /// reason, in one transaction; then each is moved aside.
    func expire(now: Timestamp) throws -> [OutboundItem] {
        let due = try db.write { db -> [OutboundItem] in
            let due = try db.query("""
                SELECT \(Self.outboundColumns) FROM outbound
                WHERE state IN ('queued', 'sending') AND expires_ms <= ? ORDER BY expires_ms, id
                """, now.millisecondsSince1970, map: outbound)
            for item in due {
                let reason = "time to live passed: expired at \(item.expires), \(item.acknowledged) of \(item.size) bytes acknowledged, swept at \(now)"
                try db.run("UPDATE outbound SET state = 'expired', reason = ?, settled = 0 WHERE id = ?", reason, item.id.bytes)
            }
            return due
        }
        if !due.isEmpty { CrashPoint.hit(CrashPoint.expireAfterMark) }
        return try due.map { try settle(try existingItem($0.id), now: now) }
    }
}
