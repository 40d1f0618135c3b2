import Foundation
import PeerLinkWire

/// The ledger's state and steps, owned by one `Ledger` and called under its mutex: the
/// database connection and where the files go. Every step that commits is followed by a
/// named crash point.
final class LedgerCore {
    let db: Database
    let location: LedgerLocation

    init(location: LedgerLocation) throws {
        self.location = location
        for dir in [DurableFile.parent(of: location.database), location.sent, location.expired, location.failed, location.inbox] {
            try DurableFile.makeDirectory(dir)
        }
        db = try Database(path: location.database)
        try db.migrate(LedgerSchema.migrations)
    }

    /// Values read from the file that break the schema's promises.
    func corrupt(_ what: String) -> DatabaseError {
        DatabaseError(kind: .unexpectedValue, message: what, path: db.path)
    }

    func peer(_ text: String) throws -> PeerID {
        do { return try PeerID(parsing: text) } catch { throw corrupt("peer '\(text.prefix(40))' is not a peer ID") }
    }

    func itemID(_ bytes: [UInt8]) throws -> ItemID {
        guard let id = ItemID(bytes: bytes) else { throw corrupt("an item ID of \(bytes.count) bytes") }
        return id
    }

    func size(_ value: Int64) throws -> UInt64 {
        guard value >= 0 else { throw corrupt("a negative size \(value)") }
        return UInt64(value)
    }
}

extension LedgerCore {
    static let outboundColumns =
        "id, peer, kind, path, message, size, priority, created_ms, expires_ms, state, reason, acked, receipt, settled, archived_path"

    func outbound(_ row: Row) throws -> OutboundItem {
        let kind = try row.text(2)
        let payload: OutboundItem.Payload
        switch kind {
        case "file": payload = .file(path: try row.text(3))
        case "message": payload = .message(try row.optionalBlob(4) ?? [])
        default: throw corrupt("an item kind '\(kind.prefix(20))'")
        }
        let stateText = try row.text(9)
        guard let state = OutboundItem.State(rawValue: stateText) else { throw corrupt("an item state '\(stateText.prefix(20))'") }
        var receipt: DeliveryReceipt?
        if let json = try row.optionalText(12) {
            do { receipt = try JSONDecoder().decode(DeliveryReceipt.self, from: Data(json.utf8)) } catch {
                throw corrupt("a receipt that does not decode: \(error)")
            }
        }
        return OutboundItem(
            id: try itemID(try row.blob(0)), peer: try peer(try row.text(1)), payload: payload,
            size: try size(try row.integer(5)), priority: Int(try row.integer(6)),
            created: Timestamp(millisecondsSince1970: try row.integer(7)),
            expires: Timestamp(millisecondsSince1970: try row.integer(8)),
            state: state, reason: try row.optionalText(10), acknowledged: try size(try row.integer(11)),
            receipt: receipt, settled: try row.integer(13) != 0, archivedPath: try row.optionalText(14))
    }

    func item(_ id: ItemID) throws -> OutboundItem? {
        try db.query("SELECT \(Self.outboundColumns) FROM outbound WHERE id = ?", id.bytes, map: outbound).first
    }

    func existingItem(_ id: ItemID) throws -> OutboundItem {
        guard let item = try item(id) else { throw LedgerError.unknownItem(id) }
        return item
    }

    static let inboundColumns = "id, peer, size, digest, received_ms, keep_until_ms, name, landed"

    func inbound(_ row: Row) throws -> InboundRecord {
        let digest = try row.blob(3)
        guard digest.count == ContentDigest.byteCount else { throw corrupt("a digest of \(digest.count) bytes") }
        return InboundRecord(
            id: try itemID(try row.blob(0)), peer: try peer(try row.text(1)), size: try size(try row.integer(2)),
            digest: digest, received: Timestamp(millisecondsSince1970: try row.integer(4)),
            keepUntil: Timestamp(millisecondsSince1970: try row.integer(5)), name: try row.optionalText(6),
            landed: try row.integer(7) != 0)
    }

    func record(_ id: ItemID) throws -> InboundRecord? {
        try db.query("SELECT \(Self.inboundColumns) FROM inbound WHERE id = ?", id.bytes, map: inbound).first
    }

    func records(from peer: PeerID) throws -> [InboundRecord] {
        try db.query("SELECT \(Self.inboundColumns) FROM inbound WHERE peer = ? ORDER BY received_ms, id", peer.description, map: inbound)
    }
}
