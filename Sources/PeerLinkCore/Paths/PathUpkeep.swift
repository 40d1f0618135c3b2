/// Which of a peer's paths to dial, and when: one link on every path, a path whose link died
/// dialled again at once, a path whose dial failed retried with exponential backoff (1 s, 2 s,
/// 4 s … 30 s), and the inviting side given a head start on the invited side. Paths are named
/// by their keys (`LinkPaths.key`); times are monotonic milliseconds. Sans-I/O: the edge
/// (`LinkManager`) dials what `due` returns and sleeps until `nextDeadline`.
package struct PathUpkeep: Sendable {
    /// The longest wait before a failed path is tried again (ms).
    package static let maxBackoff: UInt64 = 30_000

    /// The paths worth a link, in the order the policy prefers them.
    package private(set) var paths: [String] = []
    private var linkOf: [String: LinkID] = [:]
    private var failures: [String: Int] = [:]
    private var notBefore: [String: UInt64] = [:]
    private var dialling: Set<String> = []

    package init() {}

    /// The peer's paths now (discovery may add some); a path that is no longer listed keeps
    /// its link but is not dialled again.
    package mutating func setPaths(_ keys: [String]) { paths = keys }

    /// `path` has link `link` (the first one of the session, or one the edge found).
    package mutating func linked(_ path: String, _ link: LinkID) {
        linkOf[path] = link
        failures[path] = nil
        notBefore[path] = nil
        dialling.remove(path)
    }

    /// The links of the session that are up now: a path whose link is not among them has lost it.
    package mutating func live(_ links: Set<LinkID>) {
        for (path, link) in linkOf where !links.contains(link) { linkOf[path] = nil }
    }

    /// A link of the session went down: its path is due again.
    package mutating func linkDown(_ link: LinkID) {
        for (path, l) in linkOf where l == link { linkOf[path] = nil }
    }

    /// Leaves the paths without a link to the other side until `until` (the invited side
    /// waits, so that both sides do not dial the same path at once).
    package mutating func holdOff(until: UInt64) {
        for p in paths where linkOf[p] == nil { notBefore[p] = max(notBefore[p] ?? 0, until) }
    }

    /// The paths to dial now, marked as being dialled (in the policy's order).
    package mutating func due(now: UInt64) -> [String] {
        let ready = paths.filter { p in linkOf[p] == nil && !dialling.contains(p) && (notBefore[p] ?? 0) <= now }
        dialling.formUnion(ready)
        return ready
    }

    /// The dial of `path` failed: it is retried after the backoff, which this returns (ms).
    package mutating func dialFailed(_ path: String, now: UInt64) -> UInt64 {
        dialling.remove(path)
        let n = (failures[path] ?? 0) + 1
        failures[path] = n
        let wait = min(PathUpkeep.maxBackoff, 1000 << UInt64(min(n - 1, 16)))
        notBefore[path] = now + wait
        return wait
    }

    /// The dial of `path` ended without a link and without counting as a failure (the peer
    /// left meanwhile).
    package mutating func dialAbandoned(_ path: String) { dialling.remove(path) }

    /// When a path without a link next comes due (nil: none waits for time; `now` if one is due).
    package func nextDeadline(now: UInt64) -> UInt64? {
        paths.filter { linkOf[$0] == nil && !dialling.contains($0) }.map { max(notBefore[$0] ?? now, now) }.min()
    }

    /// The paths that have a link, sorted.
    package var linkedPaths: [String] { linkOf.keys.sorted() }
    /// Whether `path` is being dialled.
    package func isDialling(_ path: String) -> Bool { dialling.contains(path) }
}
