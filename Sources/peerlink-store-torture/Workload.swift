import Foundation
import PeerLinkStore
import PeerLinkWire
#if canImport(Glibc)
import Glibc
#endif

/// One run of the torture: a sender ledger delivers the manifest's items to a receiver
/// ledger, the "wire" being the receiver's partial file, written chunk by chunk. Each run
/// resumes from what the ledgers and the inbox hold: items already delivered are skipped, a
/// partial file continues at its size, an item the receiver already recorded is acknowledged
/// with its receipt and not sent again.
struct Workload {
    static let torturePoint = "torture.chunk.afterWrite"

    let dir: String
    let run: Int
    let manifest: Manifest
    let sender = PeerID(digest: [UInt8](repeating: 0x11, count: PeerID.byteCount))
    let receiver = PeerID(digest: [UInt8](repeating: 0x22, count: PeerID.byteCount))
    /// The workload's clock: starts far apart for each run and ticks 1 ms per operation.
    var clock: Int64

    init(dir: String, run: Int, manifest: Manifest) {
        self.dir = dir
        self.run = run
        self.manifest = manifest
        clock = 1_700_000_000_000 + Int64(run) * 1_000_000
    }

    mutating func now() -> Timestamp {
        clock += 1
        return Timestamp(millisecondsSince1970: clock)
    }

    mutating func perform() throws {
        let journal = try Journal(path: dir + "/journal.log", run: run)
        let out = try Ledger(root: dir + "/sender", now: now())
        let inn = try Ledger(root: dir + "/receiver", now: now())
        journal.note("start", "settled=\(out.recovery.settled.count) landed=\(inn.recovery.landed.count) dropped=\(inn.recovery.dropped.count)")
        let outbox = dir + "/outbox"
        try DurableFile.makeDirectory(outbox)

        for item in manifest.items where try out.item(item.id) == nil {
            let path = outbox + "/" + item.name
            if DurableFile.identity(path)?.size != item.size {
                try DurableFile.replace(path, with: Content.bytes(seed: manifest.seed, index: item.index, size: Int(item.size)))
            }
            _ = try out.enqueue(id: item.id, for: receiver, payload: .file(path: path), priority: item.priority,
                                ttl: item.expiring ? .milliseconds(1) : .seconds(86_400 * 30), now: now())
        }
        _ = try out.expire(now: now())

        let byID = Dictionary(uniqueKeysWithValues: manifest.items.map { ($0.id, $0) })
        while let next = try out.nextItems(for: receiver, limit: 1, now: now()).first {
            guard let item = byID[next.id] else { throw TortureError("item \(next.id) is not in the manifest") }
            if let record = try inn.record(item.id) {
                // The receiver has it: its answer to the offer is the receipt, no bytes.
                try out.markDelivered(item.id, receipt: record.receipt, now: now())
                journal.note("deliver", "\(item.index)")
                continue
            }
            try send(item, sender: out, receiver: inn, journal: journal)
            guard let digest = ContentDigest.bytes(hex: item.digest) else { throw TortureError("bad digest in manifest") }
            let outcome = try inn.land(item.id, from: sender, name: item.name, size: item.size, digest: digest,
                                       keepUntil: now() + .seconds(86_400 * 90), now: now())
            journal.note("land", "\(item.index) \(outcome.isNew ? "new" : "duplicate")")
            try out.markDelivered(item.id, receipt: outcome.record.receipt, now: now())
            journal.note("deliver", "\(item.index)")
        }
        try inn.purgeRecords(now: now())
        journal.note("done")
    }

    /// Copies the item's bytes from the receiver's offset on, one fsynced chunk at a time,
    /// recording the receiver's acknowledgement in the sender's ledger after each.
    mutating func send(_ item: Manifest.Item, sender out: Ledger, receiver inn: Ledger, journal: Journal) throws {
        let part = inn.partialFile(for: item.id)
        var offset = inn.partialBytes(for: item.id)
        if offset > item.size {
            try DurableFile.remove(part)
            offset = 0
        }
        try out.recordProgress(item.id, acknowledged: offset)
        if offset == item.size { return }
        let content = Content.bytes(seed: manifest.seed, index: item.index, size: Int(item.size))
        let fd = open(part, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileError(operation: "open", path: part, errno: errno) }
        defer { close(fd) }
        while offset < item.size {
            let end = min(offset + UInt64(manifest.chunk), item.size)
            guard lseek(fd, off_t(offset), SEEK_SET) >= 0 else { throw FileError(operation: "lseek", path: part, errno: errno) }
            try DurableFile.writeAll(fd, Array(content[Int(offset)..<Int(end)]), path: part)
            guard fsync(fd) == 0 else { throw FileError(operation: "fsync", path: part, errno: errno) }
            journal.note("chunk", "\(item.index) \(offset) \(end - offset)")
            CrashPoint.hit(Self.torturePoint)
            offset = end
            try out.recordProgress(item.id, acknowledged: offset)
        }
    }
}

struct TortureError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
