import Foundation

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
    private var linkOfPath: [String: LinkID] = [:]
    private var retry: [String: (failures: Int, at: Date)] = [:]
    private var dialling: Set<String> = []
    private var loop: Task<Void, Never>?
    /// Checks of the paths done so far, and the paths dialled, in order (the record of what
    /// the manager decided; tests read it).
    private(set) var checks = 0
    private(set) var dialled: [String] = []
    /// The paths the manager knows to have a link (it dials none of them), sorted.
    var linkedPaths: [String] { linkOfPath.keys.sorted() }
    /// Seconds between checks of the paths.
    static let interval: Double = 1

    init(peer: PeerID, session: Session) {
        self.peer = peer
        self.session = session
    }

    /// Starts maintaining links after the first one (on `first`, as `link`) joined the session.
    func start(node: Node, info: PeerInfo, first: TransportEndpoint, link: LinkID) {
        self.node = node
        merge(info.endpoints)
        if let path = paths().first(where: { $0.endpoint == first }) { linkOfPath[path.key] = link }
        guard loop == nil else { return }
        loop = Task { [weak self] in
            while !Task.isCancelled {
                guard let self, await self.check() else { return }
                try? await Task.sleep(nanoseconds: UInt64(LinkManager.interval * 1e9))
            }
        }
    }

    /// Starts maintaining links on the side that accepted the invitation, once it learns the
    /// peer's paths (its discovery record): `live` maps the session's links to their path keys
    /// so the paths already linked are not dialled again. Paths without a link are first left
    /// to the inviter for `grace` seconds, so both sides do not dial the same path at once.
    func adopt(node: Node, info: PeerInfo, live: [LinkID: String], grace: Double = 3) {
        guard self.node == nil else { return update(info) }
        self.node = node
        merge(info.endpoints)
        for (link, key) in live { linkOfPath[key] = link }
        let later = Date().addingTimeInterval(grace)
        for path in paths() where linkOfPath[path.key] == nil { retry[path.key] = (0, later) }
        guard loop == nil else { return }
        loop = Task { [weak self] in
            while !Task.isCancelled {
                guard let self, await self.check() else { return }
                try? await Task.sleep(nanoseconds: UInt64(LinkManager.interval * 1e9))
            }
        }
    }

    /// New or changed discovery record of the peer: its endpoints are added to the paths.
    func update(_ info: PeerInfo) {
        merge(info.endpoints)
        Task { _ = await check() }
    }

    func stop() {
        loop?.cancel()
        loop = nil
    }

    private func merge(_ new: [TransportEndpoint]) {
        for e in new where !endpoints.contains(e) { endpoints.append(e) }
    }

    private func paths() -> [LinkPath] {
        guard let session, let node else { return [] }
        return LinkPaths.select(endpoints, policy: session.policy.kind, media: Set(node.transports.map(\.medium)))
    }

    /// Dials every path without a live link whose retry time has come. Returns false once the
    /// peer has left the session (the manager then stops).
    private func check() async -> Bool {
        guard let session, let node, let channel = session.registry.channel(for: peer), await channel.isAlive else { return false }
        let live = await channel.linkIDs()
        let now = Date()
        for path in paths() {
            if let id = linkOfPath[path.key], live.contains(id) { continue }
            if dialling.contains(path.key) { continue }
            if let r = retry[path.key], r.at > now { continue }
            dialling.insert(path.key)
            dialled.append(path.key)
            Task { await self.dial(path, node: node, session: session) }
        }
        checks += 1
        return true
    }

    private func dial(_ path: LinkPath, node: Node, session: Session) async {
        defer { dialling.remove(path.key) }
        do {
            let link = try await node.dial(path.endpoint, expecting: peer, timeout: 10)
            let answer = try await node.requestJoin(link, context: [], timeout: 10)
            guard answer == .accepted else {
                link.close()
                throw PeerLinkError.invitationDeclined(peer)
            }
            guard let channel = session.registry.channel(for: peer), await channel.isAlive else {
                link.close()
                return
            }
            linkOfPath[path.key] = await session.attach(link, initiator: true)
            retry[path.key] = nil
        } catch {
            let failures = (retry[path.key]?.failures ?? 0) + 1
            let wait = min(30, pow(2, Double(failures - 1)))
            retry[path.key] = (failures, Date().addingTimeInterval(wait))
            session.emit(.linkAttemptFailed(peer, endpoint: path.endpoint, reason: "\(error)", retryIn: wait))
        }
    }
}
