import PeerLinkCore
import PeerLinkWire

/// A medium whose links must be set up by both peers before anyone can dial (a Wi-Fi Direct
/// group, a soft-AP): its plug-in forms or joins the set-up when a session negotiates it
/// (LINK_SETUP, docs/PROTOCOL.md §9.10) and undoes it afterwards. Register upgraders with
/// the node (`Node(upgraders:)`); sessions then propose them when bulk traffic starts on slow
/// links only. The credentials it hands over travel inside the Noise-secured session.
/// PeerLink's media provide them (`WiFiDirectUpgrader`, `MemoryUpgrader`); what a plug-in
/// does is PeerLink's own interface (`LinkUpgrading`), not part of the public API.
public protocol LinkUpgrader: Sendable {
    /// The medium its links are reported as (registered with `Medium.register`).
    var medium: Medium { get }
}

/// What a `LinkUpgrader` plug-in does when a session negotiates its medium.
package protocol LinkUpgrading: LinkUpgrader {
    /// Dials the endpoints `join` returns.
    var transport: Transport { get }
    /// What this machine can do now: host, join, or neither and why (shown to the peer and in
    /// the timeline).
    func availability() async -> LinkUpgrade.Availability
    /// Forms the group and listens on it with `listen` (which hands incoming connections to
    /// the node); returns what the joiner needs to join and reach us.
    func host(_ id: UpgradeID, listen: @escaping @Sendable (Transport) throws -> TransportListener) async throws -> [LinkSetup.Parameter]
    /// This side will join `id` once the host has formed its group: start now what needs no
    /// parameters, and return at once (best effort; `join` must still work if it failed).
    /// `leave(id)` follows in every case.
    func prepare(_ id: UpgradeID)
    /// Joins the host's group with its parameters; returns the endpoint to dial.
    func join(_ id: UpgradeID, parameters: [LinkSetup.Parameter]) async throws -> TransportEndpoint
    /// Undoes what `host` or `join` set up for `id` (idempotent).
    func leave(_ id: UpgradeID) async
    /// How `host` or `join` set `id` up, step by step, for the timeline (`hosted`, the
    /// joiner's `link-up`); "" when there is nothing to say.
    func setUpSummary(_ id: UpgradeID) -> String
    /// A session that may negotiate this medium exists (`Session` calls it when it is made,
    /// before any peer is found): get ready what needs neither a peer nor a role, so that no
    /// negotiation waits for it, and return at once (best effort). One `standDown()` follows
    /// each call.
    func standBy()
    /// A session that stood by disconnected: undo what `standBy` did once no session stands
    /// by any more (groups still up keep what they use).
    func standDown() async
}

/// One negotiation: the peer and the id its proposer chose.
public struct UpgradeID: Hashable, Sendable, CustomStringConvertible {
    /// The peer the medium is negotiated with.
    public var peer: PeerID
    /// The ID the proposer chose; unique per proposer.
    public var id: UInt32
    public var description: String { "\(peer.short)#\(id)" }
}

extension LinkUpgrading {
    /// Nothing to prepare.
    package func prepare(_ id: UpgradeID) {}
    /// Nothing to say.
    package func setUpSummary(_ id: UpgradeID) -> String { "" }
    /// Nothing to get ready.
    package func standBy() {}
    /// Nothing to undo.
    package func standDown() async {}
}
