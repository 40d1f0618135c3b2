import PeerLink

/// Unknown peers that asked for a session (`accept = "known"`) and wait for the owner's
/// answer: a pure table driven by `now:`, holding for each peer its latest invitation (the
/// `Ticket`, an `Invitation` in the daemon, anything in tests) until that invitation's own
/// timeout passes. The table never answers an invitation itself: it returns the tickets the
/// caller must decline (superseded or lapsed) and the one to accept.
///
/// A peer's record outlives its invitation by `memory`: a peer whose invitation lapsed stays
/// listed (as not waiting) so the owner can still trust it; its daemon asks again while it
/// holds items, and the next invitation is then accepted by the trust rule.
public struct PendingList<Ticket: Sendable>: Sendable {
    /// What an owner's answer found.
    public enum Answer: Sendable {
        /// The peer's invitation still waits: answer `ticket`.
        case waiting(PendingPeer, ticket: Ticket)
        /// The peer is listed but its invitation lapsed: nothing to answer now.
        case lapsed(PendingPeer)
        /// No such peer in the list.
        case unknown
    }

    /// Longest an invitation is held, whatever timeout the inviter gave (seconds).
    public static var longestWait: Double { 300 }

    /// How long (seconds) a peer stays listed after its latest invitation.
    public let memory: Double
    /// Most peers listed: a flood of new identities cannot grow the list (or the invitations
    /// held) without bound; a new peer beyond it is declined at once.
    public let capacity: Int
    private var entries: [PeerID: PendingPeer] = [:]
    private var tickets: [PeerID: Ticket] = [:]

    public init(memory: Double = 600, capacity: Int = 64) { self.memory = memory; self.capacity = max(1, capacity) }

    /// Whether an invitation from `peer` can be listed now (it is listed already, or there is room).
    public func hasRoom(for peer: PeerID) -> Bool { entries[peer] != nil || entries.count < capacity }

    /// Records an invitation from `peer` that waits up to `timeout` seconds (at most
    /// `longestWait`). Returns whether the peer is new to the list (worth telling the owner)
    /// and the ticket it replaces, which the caller declines.
    public mutating func ask(peer: PeerID, name: String, context: String, timeout: Double, ticket: Ticket,
                             now: Double, wall: Int64) -> (isNew: Bool, superseded: Ticket?) {
        let wait = min(max(timeout, 0), Self.longestWait)
        let superseded = tickets.updateValue(ticket, forKey: peer)
        if var e = entries[peer] {
            e.name = name; e.context = context; e.lastAsked = wall; e.lastAskedUptime = now
            e.timesAsked += 1
            e.expires = now + wait
            entries[peer] = e
            return (false, superseded)
        }
        var e = PendingPeer(peer: peer, name: name, context: context, firstAsked: wall, lastAsked: wall, timesAsked: 1, secondsLeft: nil)
        e.expires = now + wait
        e.lastAskedUptime = now
        entries[peer] = e
        return (true, superseded)
    }

    /// Lapses the invitations whose timeout has passed (their tickets returned, to decline) and
    /// forgets peers that have not asked for `memory` seconds.
    public mutating func expire(now: Double) -> [Ticket] {
        var lapsed: [Ticket] = []
        for (peer, e) in entries {
            if let t = e.expires, t <= now {
                entries[peer]?.expires = nil
                if let ticket = tickets.removeValue(forKey: peer) { lapsed.append(ticket) }
            }
            if now - e.lastAskedUptime >= memory, entries[peer]?.expires == nil { entries[peer] = nil }
        }
        return lapsed
    }

    /// Takes `peer` out of the list for the owner's answer (after lapsing what is due at `now`).
    public mutating func answer(_ peer: PeerID, now: Double) -> (answer: Answer, lapsed: [Ticket]) {
        let lapsed = expire(now: now)
        guard let e = entries.removeValue(forKey: peer) else { return (.unknown, lapsed) }
        if let ticket = tickets.removeValue(forKey: peer) { return (.waiting(e, ticket: ticket), lapsed) }
        return (.lapsed(e), lapsed)
    }

    /// The listed peers, first asked first, with the seconds left to answer each as of `now`
    /// (call `expire(now:)` first to leave out what has lapsed).
    public func list(now: Double) -> [PendingPeer] {
        entries.values.sorted { ($0.firstAsked, $0.peer.description) < ($1.firstAsked, $1.peer.description) }.map {
            var e = $0
            e.secondsLeft = e.expires.map { max(0, $0 - now) }
            return e
        }
    }

    /// The earliest time a waiting invitation lapses, for the caller's timer.
    public var nextExpiry: Double? { entries.values.compactMap(\.expires).min() }

    /// The listed peer that `text` names: its full ID, a unique ID prefix (4 or more
    /// characters) or its exact display name when no other listed peer has it.
    public func resolve(_ text: String) -> Result<PeerID, PendingLookupError> {
        let t = text.lowercased()
        let all = list(now: 0)
        if let e = all.first(where: { $0.peer.description == t }) { return .success(e.peer) }
        var matches = t.count >= 4 ? all.filter { $0.peer.description.hasPrefix(t) } : []
        if matches.isEmpty { matches = all.filter { $0.name == text } }
        switch matches.count {
        case 1: return .success(matches[0].peer)
        case 0: return .failure(.notListed(text, listed: all.map { "\($0.name) [\($0.peer)]" }))
        default: return .failure(.ambiguous(text, matches: matches.map { "\($0.name) [\($0.peer)]" }))
        }
    }
}

/// One peer that asked, as `GET /v1/pending` lists it.
public struct PendingPeer: Sendable, Equatable {
    public var peer: PeerID
    /// The display name it gave with its latest invitation.
    public var name: String
    /// The text it attached to its latest invitation (UTF-8; empty when none or not text).
    public var context: String
    /// Wall clock (milliseconds since 1970) of its first and latest invitation.
    public var firstAsked: Int64
    public var lastAsked: Int64
    /// Invitations received from it while listed.
    public var timesAsked: Int
    /// Seconds until its waiting invitation lapses, as of the listing; nil when none waits.
    public var secondsLeft: Double?
    /// Monotonic time (seconds) its waiting invitation lapses; nil when none waits.
    var expires: Double?
    /// Monotonic time (seconds) of its latest invitation, for forgetting it.
    var lastAskedUptime: Double

    /// Whether an invitation from it waits for an answer.
    public var waiting: Bool { expires != nil }

    public init(peer: PeerID, name: String, context: String, firstAsked: Int64, lastAsked: Int64, timesAsked: Int,
                secondsLeft: Double?) {
        self.peer = peer; self.name = name; self.context = context; self.firstAsked = firstAsked; self.lastAsked = lastAsked
        self.timesAsked = timesAsked; self.secondsLeft = secondsLeft; self.expires = secondsLeft; self.lastAskedUptime = 0
    }
}

/// Why a name does not pick one listed peer.
public enum PendingLookupError: Error, Equatable, Sendable, CustomStringConvertible {
    case notListed(String, listed: [String])
    case ambiguous(String, matches: [String])

    public var description: String {
        switch self {
        case let .notListed(t, listed):
            "no pending peer '\(t)'" + (listed.isEmpty ? " (the list is empty)" : "; pending: " + listed.joined(separator: ", "))
        case let .ambiguous(t, matches):
            "'\(t)' names several pending peers: " + matches.joined(separator: ", ") + "; give more of the peer ID"
        }
    }
}
