import Foundation
import PeerLinkWire

/// The receiver's side: records of items taken, landing of files, purge of old records.
///
/// A file lands in four steps, each durable before the next: (1) the complete partial file
/// (`.<item>.part` in the inbox) is checked against the announced size and digest and
/// fsynced; (2) the record is inserted, with the final name chosen, not yet landed; (3) the
/// final name is linked to the partial file (link, not rename, so nothing already there is
/// replaced), the inbox fsynced, the partial name removed and the inbox fsynced again;
/// (4) the record is marked landed. Only then is the sender acknowledged. A crash after (2)
/// is finished at open from the record; before (2) nothing is visible and the partial file
/// remains for the resume. The record is the single truth for duplicates.
extension LedgerCore {
    func partialPath(_ id: ItemID) -> String { location.inbox + "/.\(id).part" }

    func recordReceived(_ id: ItemID, from peer: PeerID, size: UInt64, digest: [UInt8], keepUntil: Timestamp,
                        name: String?, landed: Bool, now: Timestamp) throws -> ReceiveOutcome {
        if let existing = try record(id) { return .duplicate(existing) }
        guard digest.count == ContentDigest.byteCount else {
            throw DatabaseError(kind: .constraint, message: "a digest must be \(ContentDigest.byteCount) bytes", path: db.path)
        }
        try db.write { db in
            try db.run("""
                INSERT INTO inbound (id, peer, size, digest, received_ms, keep_until_ms, name, landed)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, id.bytes, peer.description, Int64(size), digest, now.millisecondsSince1970,
                keepUntil.millisecondsSince1970, name, landed)
        }
        CrashPoint.hit(CrashPoint.receiptAfterInsert)
        guard let stored = try record(id) else { throw corrupt("record \(id) missing after its insert") }
        return .new(stored, path: nil)
    }

    func land(_ id: ItemID, from peer: PeerID, name: String, size: UInt64, digest: [UInt8], keepUntil: Timestamp,
              now: Timestamp) throws -> ReceiveOutcome {
        let part = partialPath(id)
        if let existing = try record(id) {
            if existing.landed { try DurableFile.remove(part) }
            return .duplicate(existing)
        }
        let found = try ContentDigest.of(file: part)
        let foundSize = DurableFile.identity(part)?.size ?? 0
        guard found == digest, foundSize == size else {
            try DurableFile.remove(part)
            throw LedgerError.contentMismatch(id, expected: "\(size) bytes \(ContentDigest.hex(digest))",
                                              found: "\(foundSize) bytes \(ContentDigest.hex(found))")
        }
        try DurableFile.sync(part)
        let final = finalName(for: name, id: id)
        _ = try recordReceived(id, from: peer, size: size, digest: digest, keepUntil: keepUntil, name: final,
                               landed: false, now: now)
        guard let record = try finishLanding(id) else { throw corrupt("record \(id) gone while landing") }
        return .new(record, path: location.inbox + "/" + final)
    }

    /// Steps (3) and (4) for a record not yet landed; nil when the record had to be dropped
    /// because neither the partial nor the final file exists (the sender will send again).
    func finishLanding(_ id: ItemID) throws -> InboundRecord? {
        guard let record = try self.record(id) else { return nil }
        guard let name = record.name, !record.landed else { return record }
        let part = partialPath(id)
        let final = location.inbox + "/" + name
        let p = DurableFile.identity(part)
        let f = DurableFile.identity(final)
        if let p {
            if f == nil {
                try DurableFile.link(part, to: final)
                try DurableFile.sync(location.inbox, directory: true)
                CrashPoint.hit(CrashPoint.landAfterLink)
            } else if let f, f.inode != p.inode || f.device != p.device {
                throw FileError(operation: "land", path: final, errno: EEXIST)
            }
            try DurableFile.remove(part)
            try DurableFile.sync(location.inbox, directory: true)
            CrashPoint.hit(CrashPoint.landAfterUnlink)
        } else if f == nil {
            try db.write { db in try db.run("DELETE FROM inbound WHERE id = ? AND landed = 0", id.bytes) }
            return nil
        }
        try db.write { db in try db.run("UPDATE inbound SET landed = 1 WHERE id = ?", id.bytes) }
        CrashPoint.hit(CrashPoint.landAfterCommit)
        return try self.record(id)
    }

    /// The name a file lands under: the sender's name made safe (no directories, not hidden),
    /// or, when the inbox already holds that name, the name with the item's ID in it.
    func finalName(for name: String, id: ItemID) -> String {
        var base = (name as NSString).lastPathComponent.replacingOccurrences(of: "\0", with: "")
        while base.hasPrefix(".") { base.removeFirst() }
        if base.isEmpty { base = "item" }
        if base.utf8.count > 200 { base = String(decoding: Array(base.utf8.prefix(200)), as: UTF8.self) }
        if !DurableFile.exists(location.inbox + "/" + base) { return base }
        return "\(id)-\(base)"
    }

    func purgeRecords(now: Timestamp) throws -> Int {
        let n = try db.write { db -> Int in
            try db.run("DELETE FROM inbound WHERE keep_until_ms <= ? AND landed = 1", now.millisecondsSince1970)
            return db.changes
        }
        CrashPoint.hit(CrashPoint.purgeAfterCommit)
        return n
    }
}
