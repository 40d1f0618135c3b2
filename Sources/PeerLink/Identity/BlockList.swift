import Foundation
import PeerLinkCore
import PeerLinkWire

/// Peers the owner blocked: their invitations are declined without asking anyone, and they
/// are never listed as pending again. `blocked-peers` beside the trust store, one
/// `<peer ID> <name>` line each, replaced crash-safely like the trust store. Trusting a peer
/// (`trust(_:name:verification:now:)`) unblocks it.
extension IdentityStore {
    /// `blocked-peers`: the block list, one `<peer ID> <name>` line per blocked peer.
    public var blockPath: String { (directory as NSString).appendingPathComponent("blocked-peers") }

    /// Blocked peers, with the name each had when it was blocked.
    public func blockedPeers() -> [PeerID: String] {
        guard let text = try? String(contentsOfFile: blockPath, encoding: .utf8) else { return [:] }
        return Dictionary(TrustList.parse(text).map { ($0.peer, $0.name) }, uniquingKeysWith: { _, b in b })
    }

    /// Blocks `peer` (and stops trusting it).
    public func block(_ peer: PeerID, name: String) throws {
        var all = blockedPeers()
        all[peer] = name
        try writeBlocked(all)
        if trustedPeers()[peer] != nil { try untrust(peer) }
    }

    /// Takes `peer` off the block list.
    public func unblock(_ peer: PeerID) throws {
        var all = blockedPeers()
        guard all.removeValue(forKey: peer) != nil else { return }
        try writeBlocked(all)
    }

    private func writeBlocked(_ all: [PeerID: String]) throws {
        let lines = ["# PeerLink blocked peers: \"<peer ID> <name>\"; their invitations are declined unasked"]
            + all.keys.sorted().map { id in
                let name = (all[id] ?? "").replacingOccurrences(of: "\n", with: " ")
                return name.isEmpty ? id.description : "\(id) \(name)"
            }
        try replace(blockPath, with: lines.joined(separator: "\n") + "\n")
    }
}
