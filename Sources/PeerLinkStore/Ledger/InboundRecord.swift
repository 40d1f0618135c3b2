import PeerLinkWire

/// The receiver's durable record of an item it took: written before it acknowledges and kept
/// until `keepUntil` (past the item's time to live), so an item offered again is recognised.
public struct InboundRecord: Sendable, Equatable {
    /// The key the item is recorded under (a receiver uses `ItemID.received(_:from:)`, so the
    /// same ID from two senders is two records).
    public let id: ItemID
    /// The peer the item came from.
    public let peer: PeerID
    /// The content's size in bytes.
    public let size: UInt64
    /// SHA-256 of the content (32 bytes).
    public let digest: [UInt8]
    /// When the item was recorded (the `now` of `recordReceived` or `land`).
    public let received: Timestamp
    /// When the record may be purged: `purgeRecords(now:)` deletes it from then on.
    public let keepUntil: Timestamp
    /// The file's name in the inbox (nil for a message).
    public let name: String?
    /// False while a landing is between its record and its rename (finished at open).
    public let landed: Bool

    /// What the sender is told.
    public var receipt: DeliveryReceipt {
        DeliveryReceipt(itemID: id, size: size, digest: ContentDigest.hex(digest), receivedAt: received)
    }
}

/// What recording or landing an item did.
public enum ReceiveOutcome: Sendable, Equatable {
    /// First time: recorded (and, for a file, landed at `path`).
    case new(InboundRecord, path: String?)
    /// Already recorded: nothing changed, nothing lands twice; acknowledge with its receipt.
    case duplicate(InboundRecord)

    /// The record, new or already there.
    public var record: InboundRecord {
        switch self {
        case let .new(r, _), let .duplicate(r): return r
        }
    }

    /// True when this call recorded the item for the first time.
    public var isNew: Bool {
        if case .new = self { return true }
        return false
    }
}
