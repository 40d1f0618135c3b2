import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Named places in the ledger's commit paths where a test can make the process die, the way
/// SQLite tests itself. When `PEERLINK_CRASH_AT` is `name` (or `name:N`, the N-th hit of that
/// name, counted from 1) the process sends itself SIGKILL at that point: no flush, no atexit
/// handler, no unwinding, as a power cut or `kill -9` would. Without the variable a hit costs
/// one check of a value read once.
///
/// Every name is in `CrashPoint.all`, documented in docs/STORE.md.
public enum CrashPoint {
    /// The outbound side: the sender's ledger.
    public static let enqueueAfterInsert = "outbox.enqueue.afterInsert"
    /// After `recordProgress` committed the acknowledged byte count.
    public static let progressAfterCommit = "outbox.progress.afterCommit"
    /// After an item was marked delivered, before its payload moved aside.
    public static let deliverAfterMark = "outbox.deliver.afterMark"
    /// After `expire(now:)` marked the due items expired (one transaction), before their payloads
    /// moved aside. Not hit when no item was due.
    public static let expireAfterMark = "outbox.expire.afterMark"
    /// While moving a final item's payload aside: after its JSON note (receipt or reason) was
    /// written, before the payload moved.
    public static let settleAfterNote = "outbox.settle.afterNote"
    /// While moving a final item's file payload aside: after the file moved (or was found gone),
    /// before the ledger recorded the item settled.
    public static let settleAfterMove = "outbox.settle.afterMove"
    /// After the ledger recorded an item settled.
    public static let settleAfterCommit = "outbox.settle.afterCommit"
    /// The inbound side: the receiver's ledger and its inbox.
    public static let receiptAfterInsert = "inbox.receipt.afterInsert"
    /// While landing a file: after the partial file was linked under its final name and the inbox
    /// fsynced.
    public static let landAfterLink = "inbox.land.afterLink"
    /// While landing a file: after the partial file's name was removed, before the record was
    /// marked landed.
    public static let landAfterUnlink = "inbox.land.afterUnlink"
    /// After a landing's record was marked landed.
    public static let landAfterCommit = "inbox.land.afterCommit"
    /// After `purgeRecords(now:)` committed its deletions (hit even when it deleted none).
    public static let purgeAfterCommit = "inbox.purge.afterCommit"
    /// Atomic replacement of a small file (receipts, notes, manifests).
    public static let atomicAfterTempSync = "file.atomic.afterTempSync"
    /// After a replaced file's temporary was renamed over it, before the directory was fsynced.
    public static let atomicAfterRename = "file.atomic.afterRename"

    /// Every point the library hits, in commit-path order.
    public static let all: [String] = [
        enqueueAfterInsert, progressAfterCommit, deliverAfterMark, expireAfterMark,
        settleAfterNote, settleAfterMove, settleAfterCommit,
        receiptAfterInsert, landAfterLink, landAfterUnlink, landAfterCommit, purgeAfterCommit,
        atomicAfterTempSync, atomicAfterRename,
    ]

    /// The environment variable that arms a point.
    public static let variable = "PEERLINK_CRASH_AT"

    /// The armed point and the hit it dies at, read once.
    static let armed: (name: String, at: Int)? = parse(ProcessInfo.processInfo.environment[variable])
    private static let hits = Atomic<Int>(0)

    /// Parses `name` or `name:N` (N ≥ 1); nil for no or an empty value.
    static func parse(_ text: String?) -> (name: String, at: Int)? {
        guard let text, !text.isEmpty else { return nil }
        if let colon = text.lastIndex(of: ":"), let n = Int(text[text.index(after: colon)...]), n >= 1 {
            return (String(text[..<colon]), n)
        }
        return (text, 1)
    }

    /// Dies here with SIGKILL if `name` is the armed point and this is its chosen hit.
    @inline(__always)
    public static func hit(_ name: String) {
        guard let armed else { return }
        guard armed.name == name else { return }
        let n = hits.add(1, ordering: .relaxed).newValue
        if n == armed.at {
            kill(getpid(), SIGKILL)
            _exit(137)
        }
    }
}
