import Foundation
import PeerLinkCore
import PeerLinkWire

/// Keeps one link on every path of a peer: after the first link (or, on the side that was
/// invited, once the peer's discovery record is known), it dials
/// the peer's other paths in the background (they join the session without asking the
/// peer's application again), redials a path whose link died, and picks up paths that
/// discovery reports later. Failed paths are retried with exponential backoff (1 s … 30 s).
/// Which link carries what is the link policy's business; this only keeps links up.
actor LinkManager {
    nonisolated let peer: PeerID
    private weak var session: Session?
    private weak var node: Node?
    private var endpoints: [TransportEndpoint] = []
    /// The decisions: which path is due when (PeerLinkCore's `PathUpkeep`).
    private var upkeep = PathUpkeep()
    private var loop: Task<Void, Never>?
    /// The loop's wait for the next deadline or a change (a link down, a dial done, a new path).
    private var wake: CheckedContinuation<Void, Never>?
    /// Checks of the paths done so far, and the paths dialled, in order (the record of what
    /// the manager decided; tests read it).
    private(set) var checks = 0
    private(set) var dialled: [String] = []
    /// The paths the manager knows to have a link (it dials none of them), sorted.
    var linkedPaths: [String] { upkeep.linkedPaths }
    /// Whether the manager has decided everything it can: it went over its paths since the last
    /// change, dials nothing now, and waits for no retry; only a new event can make it dial.
    var settled: Bool {
        wake != nil && upkeep.nextDeadline(now: Runtime.milliseconds()) == nil && !upkeep.paths.contains { upkeep.isDialling($0) }
    }

    init(peer: PeerID, session: Session) {
        self.peer = peer
        self.session = session
    }

    /// Starts maintaining links after the first one (on `first`, as `link`) joined the session.
    func start(node: Node, info: PeerInfo, first: TransportEndpoint, link: LinkID) {
        self.node = node
        merge(info.endpoints)
        if let path = paths().first(where: { $0.endpoint == first }) { upkeep.linked(path.key, link) }
        run()
    }

    /// Starts maintaining links on the side that accepted the invitation, once it learns the
    /// peer's paths (its discovery record): `live` maps the session's links to their path keys
    /// so the paths already linked are not dialled again. Paths without a link are first left
    /// to the inviter for `grace` seconds, so both sides do not dial the same path at once.
    func adopt(node: Node, info: PeerInfo, live: [LinkID: String], grace: Double = 3) {
        guard self.node == nil else { return update(info) }
        self.node = node
        merge(info.endpoints)
        for (link, key) in live { upkeep.linked(key, link) }
        upkeep.holdOff(until: Runtime.milliseconds() + UInt64(grace * 1000))
        run()
    }

    /// New or changed discovery record of the peer: its endpoints are added to the paths.
    func update(_ info: PeerInfo) {
        merge(info.endpoints)
        poke()
    }

    /// A link of the session with this peer went down: its path is due again.
    func linkDown(_ link: LinkID) {
        upkeep.linkDown(link)
        poke()
    }

    func stop() {
        loop?.cancel()
        loop = nil
        poke()
    }

    private func merge(_ new: [TransportEndpoint]) {
        for e in new where !endpoints.contains(e) { endpoints.append(e) }
        upkeep.setPaths(paths().map(\.key))
    }

    private func paths() -> [LinkPath] {
        guard let session, let node else { return [] }
        return LinkPaths.select(endpoints, policy: session.policy.kind, media: Set(node.transports.map(\.medium)))
    }

    /// Checks the paths whenever something changed or a retry comes due; no polling.
    private func run() {
        guard loop == nil else { return poke() }
        loop = Task { [weak self] in
            while !Task.isCancelled {
                guard let self, await self.check() else { return }
                await self.waitForChange()
            }
        }
    }

    /// Sleeps until the next path comes due, or until `poke`.
    private func waitForChange() async {
        let deadline = upkeep.nextDeadline(now: Runtime.milliseconds())
        let timer: Task<Void, Never>? = deadline.map { at in
            Task { [weak self] in
                let now = Runtime.milliseconds()
                if at > now { do { try await Runtime.sleep(nanoseconds: (at - now) * 1_000_000) } catch { return } }
                await self?.poke()
            }
        }
        await withCheckedContinuation { wake = $0 }
        timer?.cancel()
    }

    private func poke() {
        let w = wake
        wake = nil
        w?.resume()
    }

    /// Dials every path that is due. Returns false once the peer has left the session (the
    /// manager then stops).
    private func check() async -> Bool {
        guard let session, let node, let channel = session.registry.channel(for: peer), await channel.isAlive else { return false }
        upkeep.live(await channel.linkIDs())
        checks += 1
        let byKey = Dictionary(paths().map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        for key in upkeep.due(now: Runtime.milliseconds()) {
            guard let path = byKey[key] else { upkeep.dialAbandoned(key); continue }
            dialled.append(key)
            Task { await self.dial(path, node: node, session: session) }
        }
        return true
    }

    private func dial(_ path: LinkPath, node: Node, session: Session) async {
        defer { poke() }
        do {
            let link = try await node.dial(path.endpoint, expecting: peer, timeout: 10)
            let answer = try await node.requestJoin(link, context: [], timeout: 10)
            guard answer == .accepted else {
                link.close()
                throw PeerLinkError.invitationDeclined(peer)
            }
            guard let channel = session.registry.channel(for: peer), await channel.isAlive else {
                link.close()
                upkeep.dialAbandoned(path.key)
                return
            }
            upkeep.linked(path.key, await session.attach(link, initiator: true))
        } catch {
            let wait = upkeep.dialFailed(path.key, now: Runtime.milliseconds())
            session.emit(.linkAttemptFailed(peer, endpoint: path.endpoint, failure: DialFailure(endpoint: path.endpoint, error: error),
                                            retryIn: .milliseconds(clamping: wait)))
        }
    }
}
