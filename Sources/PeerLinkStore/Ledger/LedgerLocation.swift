/// Where a ledger keeps its files. The payload folders must be on the same file system as
/// the payloads they receive (moves are renames), and the inbox holds its own temporary
/// files, so a landing is a rename within one directory.
public struct LedgerLocation: Sendable, Equatable {
    /// The SQLite file.
    public var database: String
    /// Delivered payloads and their receipts.
    public var sent: String
    /// Expired payloads and their reasons.
    public var expired: String
    /// Failed payloads and their reasons.
    public var failed: String
    /// Received files, landed under their final names; partial ones are hidden
    /// (`.<item>.part`).
    public var inbox: String

    /// Names each file and folder explicitly; the folders are created when the ledger opens.
    public init(database: String, sent: String, expired: String, failed: String, inbox: String) {
        self.database = database
        self.sent = sent
        self.expired = expired
        self.failed = failed
        self.inbox = inbox
    }

    /// Everything under `root`: `ledger.sqlite`, `sent/`, `expired/`, `failed/`, `inbox/`.
    public init(root: String) {
        self.init(database: root + "/ledger.sqlite", sent: root + "/sent", expired: root + "/expired",
                  failed: root + "/failed", inbox: root + "/inbox")
    }

    /// The folder an item in final state `state` is moved aside to.
    func archive(for state: OutboundItem.State) -> String {
        switch state {
        case .expired: return expired
        case .failed: return failed
        default: return sent
        }
    }
}
