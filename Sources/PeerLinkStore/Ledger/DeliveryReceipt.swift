/// The receiver's word that it holds an item durably: what it recorded before acknowledging.
/// The sender keeps it in its ledger and writes it beside the payload it moves aside.
public struct DeliveryReceipt: Sendable, Equatable, Codable {
    public let itemID: ItemID
    public let size: UInt64
    /// SHA-256 of the content, lowercase hex.
    public let digest: String
    public let receivedAt: Timestamp

    public init(itemID: ItemID, size: UInt64, digest: String, receivedAt: Timestamp) {
        self.itemID = itemID
        self.size = size
        self.digest = digest
        self.receivedAt = receivedAt
    }
}
