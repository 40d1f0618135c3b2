import PeerLinkWire

/// An item waiting for, travelling to, or done with one peer: a file or a small message with
/// a sender-chosen ID, a priority and a time to live.
public struct OutboundItem: Sendable, Equatable {
    /// What an item carries, as stored in the ledger's `kind` column: `file` or `message`.
    public enum Kind: String, Sendable, Codable {
        /// `file`: a file sent from disk; `message`: bytes held in the ledger.
        case file, message
    }

    /// What is sent: a file the ledger refers to by path (the payload stays a file), or the
    /// bytes of a message kept in the ledger itself.
    public enum Payload: Sendable, Equatable {
        /// A file at this path, sent from disk; the ledger moves it aside once the item is final.
        case file(path: String)
        /// A message's bytes, held in the ledger itself.
        case message([UInt8])

        /// Whether this payload is a file or a message.
        public var kind: Kind {
            switch self {
            case .file: return .file
            case .message: return .message
            }
        }
    }

    /// Where an item is in its life. `queued` and `sending` are pending; the other three are
    /// final and come with the payload moved aside.
    public enum State: String, Sendable, Codable, CaseIterable {
        /// `queued`: waiting, nothing acknowledged yet; `sending`: the receiver has acknowledged some
        /// bytes (`acknowledged`); `delivered`: the receiver sent its receipt; `expired`: the time to
        /// live passed first; `failed`: given up with a reason (`markFailed`).
        case queued, sending, delivered, expired, failed

        /// True for `queued` and `sending`: the item may still be sent.
        public var isPending: Bool { self == .queued || self == .sending }
    }

    /// The sender-chosen ID; unique in the ledger.
    public let id: ItemID
    /// The peer the item is for.
    public let peer: PeerID
    /// The file or message sent.
    public let payload: Payload
    /// Whether the payload is a file or a message.
    public var kind: Kind { payload.kind }
    /// The payload's size in bytes when it was enqueued.
    public let size: UInt64
    /// Higher goes first; items of equal priority go oldest first.
    public let priority: Int
    /// When the item was enqueued (the `now` given to `enqueue`).
    public let created: Timestamp
    /// When its time to live ends: `created` plus the `ttl` given to `enqueue`. From then on the
    /// item is no longer offered, and `expire(now:)` ends it.
    public let expires: Timestamp
    /// Where the item is in its life.
    public internal(set) var state: State
    /// Why the item ended as it did (expiry, failure), for reports.
    public internal(set) var reason: String?
    /// Bytes the receiver has acknowledged holding: where a resumed transfer starts.
    public internal(set) var acknowledged: UInt64
    /// The receiver's receipt, once delivered.
    public internal(set) var receipt: DeliveryReceipt?
    /// False between a final state's commit and the payload's move aside (finished at open
    /// after a crash).
    public internal(set) var settled: Bool
    /// Where the payload file was moved aside, once settled (nil for a message or a payload
    /// that had already gone).
    public internal(set) var archivedPath: String?
}

/// What `enqueue` did.
public enum EnqueueOutcome: Sendable, Equatable {
    /// The item is new in the ledger.
    case added(OutboundItem)
    /// An item with this ID was already there (it is returned as the ledger holds it; nothing
    /// was changed).
    case existing(OutboundItem)

    /// The item, added or existing.
    public var item: OutboundItem {
        switch self {
        case let .added(i), let .existing(i): return i
        }
    }
}
