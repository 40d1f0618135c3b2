/// A ledger operation refused for a reason the caller can act on.
public enum LedgerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No item with this ID.
    case unknownItem(ItemID)
    /// The item is already final (delivered, expired or failed) and cannot take this change.
    case notPending(ItemID, OutboundItem.State)
    /// A file payload that is not there (or not a regular file) at enqueue.
    case payloadMissing(String)
    /// A received file is not what the sender announced; its partial file was removed, so the
    /// transfer starts again from zero.
    case contentMismatch(ItemID, expected: String, found: String)
    /// The same ID enqueued again with a different peer or payload.
    case conflictingItem(ItemID)

    public var description: String {
        switch self {
        case let .unknownItem(id): return "no item \(id) in the ledger"
        case let .notPending(id, state): return "item \(id) is already \(state.rawValue)"
        case let .payloadMissing(path): return "payload \(path) is missing or not a regular file"
        case let .contentMismatch(id, expected, found):
            return "item \(id) arrived as \(found), announced as \(expected); partial file dropped"
        case let .conflictingItem(id): return "item \(id) is already queued with another peer or payload"
        }
    }
}
