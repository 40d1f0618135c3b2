import Foundation
import PeerLinkCore
import PeerLinkWire

/// How the owner came to trust a peer, weakest first.
public enum TrustVerification: String, Sendable, Codable, Comparable {
    /// Accepted when it asked (an invitation answered "always", a pending peer approved):
    /// trust on first use; nothing checked that the key is the one the owner meant.
    case firstUse = "first-use"
    /// The owner entered its full peer ID (`peerlink trust add`): as good as the channel the
    /// ID came through.
    case peerID = "peer-id"
    /// The two owners compared verification codes (`peerlink trust verify`).
    case code

    public static func < (a: Self, b: Self) -> Bool { a.rank < b.rank }
    private var rank: Int { self == .firstUse ? 0 : self == .peerID ? 1 : 2 }
}

/// One trusted peer and what is known about how it came to be trusted.
public struct TrustedPeer: Sendable, Equatable {
    /// The trusted peer's ID.
    public var peer: PeerID
    /// The owner's note for it, usually its name.
    public var name: String
    /// When this node first trusted it; nil for an entry written before PeerLink kept the time.
    public var firstSeen: Date?
    /// The strongest verification so far; nil for an entry written before PeerLink kept it.
    public var verification: TrustVerification?
    /// When that verification happened.
    public var verifiedAt: Date?

    /// Makes an entry; `firstSeen`, `verification` and `verifiedAt` are nil when not known.
    public init(peer: PeerID, name: String, firstSeen: Date? = nil, verification: TrustVerification? = nil, verifiedAt: Date? = nil) {
        self.peer = peer
        self.name = name
        self.firstSeen = firstSeen
        self.verification = verification
        self.verifiedAt = verifiedAt
    }
}

/// The trust store's text (`trusted-peers`): one `<peer ID> <name>` line per peer, each
/// followed by a `#= key=value …` line of what is known about it. Older PeerLink releases read
/// the ID lines and skip the `#` ones, so the file stays readable to them.
enum TrustList {
    static let header = "# PeerLink trusted peers: \"<peer ID> <name>\", then \"#= first-seen=… verification=… verified-at=…\""

    static func parse(_ text: String) -> [TrustedPeer] {
        var out: [TrustedPeer] = []
        var index: [PeerID: Int] = [:]
        var last: Int?
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("#=") {
                if let last { apply(line.dropFirst(2), to: &out[last]) }
                continue
            }
            last = nil
            let parts = line.split(separator: " ", maxSplits: 1)
            guard let first = parts.first, let id = try? PeerID(parsing: String(first)) else { continue }
            let entry = TrustedPeer(peer: id, name: parts.count > 1 ? String(parts[1]) : "")
            if let i = index[id] { out[i] = entry; last = i } else { index[id] = out.count; last = out.count; out.append(entry) }
        }
        return out
    }

    private static func apply(_ fields: Substring, to entry: inout TrustedPeer) {
        for field in fields.split(separator: " ") {
            let kv = field.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { continue }
            switch kv[0] {
            case "first-seen": entry.firstSeen = date(kv[1])
            case "verification": entry.verification = TrustVerification(rawValue: kv[1])
            case "verified-at": entry.verifiedAt = date(kv[1])
            default: continue  // a later release's field
            }
        }
    }

    static func render(_ peers: [TrustedPeer]) -> String {
        var lines = [header]
        for p in peers.sorted(by: { $0.peer < $1.peer }) {
            lines.append(p.name.isEmpty ? p.peer.description : "\(p.peer) \(p.name.replacingOccurrences(of: "\n", with: " "))")
            var meta: [String] = []
            if let t = p.firstSeen { meta.append("first-seen=\(text(t))") }
            if let v = p.verification { meta.append("verification=\(v.rawValue)") }
            if let t = p.verifiedAt { meta.append("verified-at=\(text(t))") }
            if !meta.isEmpty { lines.append("#= " + meta.joined(separator: " ")) }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func text(_ date: Date) -> String {
        date.formatted(.iso8601)  // 2026-11-28T09:30:00Z
    }

    static func date(_ text: String) -> Date? { try? Date(text, strategy: .iso8601) }
}

extension IdentityStore {
    /// Peers trusted for `--accept-known`, with the owner's note for each.
    public func trustedPeers() -> [PeerID: String] {
        Dictionary(trustRecords().map { ($0.peer, $0.name) }, uniquingKeysWith: { _, b in b })
    }

    /// Every trusted peer with when it was first trusted and how it was verified.
    public func trustRecords() -> [TrustedPeer] {
        guard let text = try? String(contentsOfFile: trustPath, encoding: .utf8) else { return [] }
        return TrustList.parse(text)
    }

    /// Trusts `peer` under `name`, recording `verification` when it is stronger than what was
    /// known (a code comparison is always recorded anew). The first time is kept.
    public func trust(_ peer: PeerID, name: String, verification: TrustVerification = .peerID, now: Date = Date()) throws {
        var all = trustRecords()
        if let i = all.firstIndex(where: { $0.peer == peer }) {
            all[i].name = name
            if all[i].verification.map({ verification > $0 || verification == .code }) ?? true {
                all[i].verification = verification
                all[i].verifiedAt = now
            }
        } else {
            all.append(TrustedPeer(peer: peer, name: name, firstSeen: now, verification: verification, verifiedAt: now))
        }
        try writeTrust(all)
        if blockedPeers()[peer] != nil { try unblock(peer) }
    }

    /// A full peer ID, or the one trusted peer whose name is `text` or whose ID starts with it
    /// (4 or more characters); nil when none or several match (`matches` says which).
    public func resolveTrusted(_ text: String) -> (peer: PeerID?, matches: [TrustedPeer]) {
        if let id = try? PeerID(parsing: text) { return (id, trustRecords().filter { $0.peer == id }) }
        let records = trustRecords()
        let byName = records.filter { $0.name == text }
        let lower = text.lowercased()
        let hits = !byName.isEmpty ? byName : lower.count >= 4 ? records.filter { $0.peer.description.hasPrefix(lower) } : []
        return (hits.count == 1 ? hits[0].peer : nil, hits)
    }

    /// Stops trusting `peer`.
    public func untrust(_ peer: PeerID) throws {
        try writeTrust(trustRecords().filter { $0.peer != peer })
    }

    /// Replaces the trust store crash-safely: written to a temporary file, fsynced, renamed
    /// over the old one, and the directory fsynced, so a crash or power cut at any instant
    /// leaves either the old list or the new one.
    private func writeTrust(_ all: [TrustedPeer]) throws { try replace(trustPath, with: TrustList.render(all)) }

    /// Replaces the file at `path` with `text` crash-safely (see `writeTrust`).
    func replace(_ path: String, with text: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let trustPath = path
        let tmp = trustPath + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw PeerLinkError.file(FileFailure(path: tmp, .system(.write, errno: errno))) }
        let bytes = Array(text.utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard n == bytes.count, synced, rename(tmp, trustPath) == 0 else {
            let e = errno
            unlink(tmp)
            throw PeerLinkError.file(FileFailure(path: trustPath, .system(.write, errno: e)))
        }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 { _ = fsync(dir); close(dir) }
    }
}
