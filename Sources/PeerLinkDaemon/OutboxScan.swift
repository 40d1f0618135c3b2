import Crypto
import Foundation
import PeerLink
import PeerLinkStore

/// What the daemon finds in its outbox: `OUTBOX/<peer>/<file>` is an item for that peer. The
/// folder names the peer by its full ID, a unique prefix of the IDs it knows (at least 8
/// characters), or a name in the trust store. A file is picked up once it is complete: write
/// it under a name starting with `.` or ending in `.part` or `.tmp`, then rename it (the
/// rename is atomic); such names are never picked up.
struct OutboxScan {
    /// One complete file for a peer, with the ID it is sent under. The ID is derived from the
    /// peer, the path and the file's identity (device, inode, size, modification time), so a
    /// scan after a restart finds the same item again instead of a second one.
    struct Entry: Equatable {
        let peer: PeerID
        let path: String
        let size: UInt64
        let id: ItemID
    }

    /// A folder the scan could not use, with why (said once per folder by the daemon).
    struct Problem: Equatable {
        let folder: String
        let reason: String
    }

    static func isPending(_ name: String) -> Bool {
        name.hasPrefix(".") || name.hasSuffix(".part") || name.hasSuffix(".tmp")
    }

    /// The entries under `outbox`, given the peers the node knows by name (trust store) and by
    /// ID (trusted and seen).
    static func scan(_ outbox: String, trusted: [PeerID: String], seen: Set<PeerID>,
                     naming: FieldDaemon.ItemNaming = .fileIdentity) -> (entries: [Entry], problems: [Problem]) {
        let fm = FileManager.default
        guard let folders = try? fm.contentsOfDirectory(atPath: outbox) else { return ([], []) }
        var entries: [Entry] = []
        var problems: [Problem] = []
        let known = Set(trusted.keys).union(seen)
        for folder in folders.sorted() where !folder.hasPrefix(".") {
            let dir = (outbox as NSString).appendingPathComponent(folder)
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: dir, isDirectory: &isDir), isDir.boolValue else { continue }
            let peer: PeerID
            switch resolve(folder, trusted: trusted, known: known) {
            case let .success(p): peer = p
            case let .failure(reason):
                problems.append(Problem(folder: dir, reason: reason.text))
                continue
            }
            guard let files = try? fm.contentsOfDirectory(atPath: dir) else { continue }
            for name in files.sorted() where !isPending(name) {
                let path = (dir as NSString).appendingPathComponent(name)
                var st = stat()
                guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
                let id = naming == .fileIdentity ? itemID(peer: peer, path: path, st) : itemID(peer: peer, name: folder + "/" + name, size: UInt64(st.st_size))
                entries.append(Entry(peer: peer, path: path, size: UInt64(st.st_size), id: id))
            }
        }
        return (entries, problems)
    }

    struct Unresolved: Error { let text: String }

    /// The peer a folder name stands for.
    static func resolve(_ folder: String, trusted: [PeerID: String], known: Set<PeerID>) -> Result<PeerID, Unresolved> {
        if let id = try? PeerID(parsing: folder) { return .success(id) }
        let named = trusted.filter { $0.value == folder }.map(\.key)
        if named.count == 1, let p = named.first { return .success(p) }
        if named.count > 1 { return .failure(Unresolved(text: "\(named.count) trusted peers are named '\(folder)'; name the folder by peer ID")) }
        let upper = folder.uppercased()
        let matches = known.filter { $0.description.hasPrefix(upper) }
        guard upper.count >= 8 else { return .failure(Unresolved(text: "'\(folder)' is no trusted name, and an ID prefix needs at least 8 characters")) }
        switch matches.count {
        case 1: return .success(matches[matches.startIndex])
        case 0: return .failure(Unresolved(text: "'\(folder)' is no trusted name and no peer seen so far has an ID starting with it"))
        default: return .failure(Unresolved(text: "'\(folder)' is the start of \(matches.count) peers' IDs; use more characters"))
        }
    }

    static func itemID(peer: PeerID, path: String, _ st: stat) -> ItemID {
        var h = SHA256()
        h.update(data: Array("peerlink outbox item\0\(peer)\0\(path)\0".utf8))
        for v in [UInt64(st.st_dev), UInt64(st.st_ino), UInt64(st.st_size), UInt64(st.st_mtim.tv_sec), UInt64(st.st_mtim.tv_nsec)] {
            withUnsafeBytes(of: v.bigEndian) { h.update(bufferPointer: $0) }
        }
        return ItemID(bytes: Array(h.finalize().prefix(ItemID.byteCount))) ?? ItemID.random()
    }

    /// The ID of `FieldDaemon.ItemNaming.pathInOutbox`: from the peer, the file's path inside
    /// the outbox and its size.
    static func itemID(peer: PeerID, name: String, size: UInt64) -> ItemID {
        var h = SHA256()
        h.update(data: Array("peerlink outbox item by name\0\(peer)\0\(name)\0".utf8))
        withUnsafeBytes(of: size.bigEndian) { h.update(bufferPointer: $0) }
        return ItemID(bytes: Array(h.finalize().prefix(ItemID.byteCount))) ?? ItemID.random()
    }
}
