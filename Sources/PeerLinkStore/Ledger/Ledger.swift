import PeerLinkWire
import Synchronization

/// The durable store-and-forward ledger of one node: what it must send to whom, what it took
/// from whom, and where the payload files are. Every change is committed to SQLite
/// (`synchronous=FULL`) before the call returns, and every change that also moves a file is
/// ordered so that a crash at any instant is finished, not undone, when the ledger is next
/// opened (`recovery` says what that did). docs/STORE.md states the guarantees.
///
/// The ledger reads no clock: operations that need the time take `now`.
///
/// It is a `final class` around a `Mutex` rather than an actor: its calls are short,
/// blocking disk work (a commit is an fsync) that a caller runs on its blocking pool, they
/// must not interleave, and synchronous calls keep the crash-ordering visible in one place
/// and the tests free of `await`.
public final class Ledger: Sendable {
    /// Where the ledger keeps its database and payload folders.
    public let location: LedgerLocation
    /// What opening finished of the work a crash interrupted.
    public let recovery: RecoveryReport
    private let core: Mutex<LedgerCore>

    /// Opens (or creates) the ledger and its folders, brings the schema up to date, and
    /// finishes what a crash interrupted (moves aside, landings).
    public init(location: LedgerLocation, now: Timestamp) throws {
        let core = try LedgerCore(location: location)
        recovery = try core.recover(now: now)
        self.location = location
        self.core = Mutex(core)
    }

    /// Opens the ledger laid out under `root` (`LedgerLocation(root:)`).
    public convenience init(root: String, now: Timestamp) throws {
        try self.init(location: LedgerLocation(root: root), now: now)
    }

    // MARK: Outbound

    /// Adds an item for `peer`, queued, expiring `ttl` after `now`. Enqueueing an ID the ledger
    /// already holds (with the same peer and payload) changes nothing and returns `.existing`;
    /// with another peer or payload it throws `conflictingItem`. A file payload must be
    /// complete: its size is taken now.
    public func enqueue(id: ItemID, for peer: PeerID, payload: OutboundItem.Payload, priority: Int = 0,
                        ttl: Duration, now: Timestamp) throws -> EnqueueOutcome {
        try core.withLock { try $0.enqueue(id: id, peer: peer, payload: payload, priority: priority, ttl: ttl, now: now) }
    }

    /// Up to `limit` pending items for `peer` not yet expired at `now`: highest priority
    /// first, then oldest first.
    public func nextItems(for peer: PeerID, limit: Int = 16, now: Timestamp) throws -> [OutboundItem] {
        try core.withLock { try $0.nextItems(for: peer, limit: limit, now: now) }
    }

    /// The item with this ID, whatever its state.
    public func item(_ id: ItemID) throws -> OutboundItem? {
        try core.withLock { try $0.item(id) }
    }

    /// Every item in one of `states`, oldest first.
    public func items(in states: Set<OutboundItem.State>) throws -> [OutboundItem] {
        try core.withLock { try $0.items(states: states) }
    }

    /// How many items each peer has in each of `states` (peers and states with none left
    /// out), counted by SQLite without loading the items.
    public func counts(in states: Set<OutboundItem.State>) throws -> [OutboundCount] {
        try core.withLock { try $0.counts(states: states) }
    }

    /// Records that the receiver holds the first `acknowledged` bytes (the item becomes
    /// `sending`). The receiver's figure wins, even when lower than an earlier one.
    @discardableResult
    public func recordProgress(_ id: ItemID, acknowledged: UInt64) throws -> OutboundItem {
        try core.withLock { try $0.recordProgress(id, acknowledged: acknowledged) }
    }

    /// Marks the item delivered with the receiver's receipt, then moves its payload file to
    /// `sent/` beside a JSON note holding the receipt. Idempotent for a delivered item.
    @discardableResult
    public func markDelivered(_ id: ItemID, receipt: DeliveryReceipt, now: Timestamp) throws -> OutboundItem {
        try core.withLock { try $0.markDelivered(id, receipt: receipt, now: now) }
    }

    /// Marks the item failed with `reason` and moves its payload to `failed/` with a note.
    @discardableResult
    public func markFailed(_ id: ItemID, reason: String, now: Timestamp) throws -> OutboundItem {
        try core.withLock { try $0.markFailed(id, reason: reason, now: now) }
    }

    /// Expires every pending item whose time to live has passed at `now` and moves each to
    /// `expired/` with a note of its reason; returns them (state `expired`, `reason` set).
    public func expire(now: Timestamp) throws -> [OutboundItem] {
        try core.withLock { try $0.expire(now: now) }
    }

    // MARK: Inbound

    /// Records an item taken from `peer` (a message, or a file landed by other means), durably,
    /// before the receiver acknowledges it. `.duplicate` when the ID was already recorded:
    /// acknowledge with its receipt and deliver nothing. Keep `keepUntil` past the item's
    /// time to live, so a late replay is still recognised.
    public func recordReceived(_ id: ItemID, from peer: PeerID, size: UInt64, digest: [UInt8], keepUntil: Timestamp,
                               now: Timestamp) throws -> ReceiveOutcome {
        try core.withLock {
            try $0.recordReceived(id, from: peer, size: size, digest: digest, keepUntil: keepUntil, name: nil,
                                  landed: true, now: now)
        }
    }

    /// Where the bytes of an incoming file go until it lands: `.<item>.part` in the inbox (same
    /// directory, so landing is a rename; hidden, so nothing partial shows).
    public func partialFile(for id: ItemID) -> String {
        location.inbox + "/.\(id).part"
    }

    /// Bytes of the partial file already on disk: the offset to resume from.
    public func partialBytes(for id: ItemID) -> UInt64 {
        DurableFile.identity(partialFile(for: id))?.size ?? 0
    }

    /// Lands a complete partial file under `name` (made safe; with the item's ID when taken)
    /// and records it, in an order a crash cannot break: `.new` with the final path, or
    /// `.duplicate` when the ID was already recorded (the partial file is dropped). A file that
    /// is not `size` bytes with SHA-256 `digest` is refused (`contentMismatch`) and dropped.
    public func land(_ id: ItemID, from peer: PeerID, name: String, size: UInt64, digest: [UInt8],
                     keepUntil: Timestamp, now: Timestamp) throws -> ReceiveOutcome {
        try core.withLock {
            try $0.land(id, from: peer, name: name, size: size, digest: digest, keepUntil: keepUntil, now: now)
        }
    }

    /// The record of an item taken, if any: what to answer when it is offered again.
    public func record(_ id: ItemID) throws -> InboundRecord? {
        try core.withLock { try $0.record(id) }
    }

    /// Every record of items taken from `peer`, oldest first (a receiver's quota counts them).
    public func records(from peer: PeerID) throws -> [InboundRecord] {
        try core.withLock { try $0.records(from: peer) }
    }

    /// Deletes the records whose `keepUntil` has passed at `now`; returns how many.
    @discardableResult
    public func purgeRecords(now: Timestamp) throws -> Int {
        try core.withLock { try $0.purgeRecords(now: now) }
    }
}
