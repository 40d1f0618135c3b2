/// The receiver's word that it holds an item durably: what it recorded before acknowledging.
/// The sender keeps it in its ledger and writes it beside the payload it moves aside.
public struct DeliveryReceipt: Sendable, Equatable, Codable {
    /// The ID of the item the receiver holds.
    public let itemID: ItemID
    /// The content's size in bytes as the receiver recorded it.
    public let size: UInt64
    /// SHA-256 of the content, lowercase hex.
    public let digest: String
    /// When the receiver recorded the item, by its own wall clock.
    public let receivedAt: Timestamp

    /// Makes a receipt; `digest` is the content's SHA-256 in lowercase hex.
    public init(itemID: ItemID, size: UInt64, digest: String, receivedAt: Timestamp) {
        self.itemID = itemID
        self.size = size
        self.digest = digest
        self.receivedAt = receivedAt
    }
}
