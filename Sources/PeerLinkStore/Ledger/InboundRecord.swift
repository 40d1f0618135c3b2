import PeerLinkWire

/// The receiver's durable record of an item it took: written before it acknowledges and kept
/// until `keepUntil` (past the item's time to live), so an item offered again is recognised.
public struct InboundRecord: Sendable, Equatable {
    public let id: ItemID
    public let peer: PeerID
    public let size: UInt64
    public let digest: [UInt8]
    public let received: Timestamp
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

    public var record: InboundRecord {
        switch self {
        case let .new(r, _), let .duplicate(r): return r
        }
    }

    public var isNew: Bool {
        if case .new = self { return true }
        return false
    }
}
