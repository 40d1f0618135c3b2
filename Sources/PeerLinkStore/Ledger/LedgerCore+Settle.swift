import Foundation

/// Moving a final item's payload aside: a note (receipt or reason) is written, the payload
/// renamed into the state's folder, and the item marked settled. Every step is idempotent,
/// so recovery at open simply runs it again for each item still unsettled.
extension LedgerCore {
    /// What is written beside a payload moved aside.
    struct SettledNote: Codable {
        var item: ItemID
        var peer: String
        var kind: OutboundItem.Kind
        var size: UInt64
        var state: OutboundItem.State
        var reason: String?
        var receipt: DeliveryReceipt?
        var originalPath: String?
        var message: Data?
        var settledAt: Timestamp
    }

    func notePath(_ item: OutboundItem) -> String {
        location.archive(for: item.state) + "/\(item.id).json"
    }

    func archivePath(_ item: OutboundItem, original: String) -> String {
        location.archive(for: item.state) + "/\(item.id)-" + (original as NSString).lastPathComponent
    }

    func settle(_ item: OutboundItem, now: Timestamp) throws -> OutboundItem {
        guard !item.settled, !item.state.isPending else { return item }
        var original: String?
        var message: Data?
        switch item.payload {
        case let .file(path): original = path
        case let .message(bytes): message = Data(bytes)
        }
        let note = SettledNote(item: item.id, peer: item.peer.description, kind: item.kind, size: item.size,
                               state: item.state, reason: item.reason, receipt: item.receipt,
                               originalPath: original, message: message, settledAt: now)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try DurableFile.replace(notePath(item), with: Array(try encoder.encode(note)))
        CrashPoint.hit(CrashPoint.settleAfterNote)

        var archived: String?
        if let original {
            let target = archivePath(item, original: original)
            switch (DurableFile.exists(original), DurableFile.exists(target)) {
            case (true, false):
                try DurableFile.move(original, to: target)
                archived = target
            case (_, true):
                // Moved before a crash. A file now at the original path is a new one: left alone.
                archived = target
            case (false, false):
                archived = nil
            }
            CrashPoint.hit(CrashPoint.settleAfterMove)
        }
        var reason = item.reason
        if original != nil, archived == nil {
            reason = (reason.map { $0 + "; " } ?? "") + "payload was gone when it was to be moved aside"
        }
        try db.write { db in
            try db.run("UPDATE outbound SET settled = 1, archived_path = ?, reason = ? WHERE id = ?",
                       archived, reason, item.id.bytes)
        }
        CrashPoint.hit(CrashPoint.settleAfterCommit)
        return try existingItem(item.id)
    }
}
