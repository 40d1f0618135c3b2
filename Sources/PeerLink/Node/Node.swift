import Foundation
@preconcurrency import Crypto
import PeerLinkCore
import PeerLinkWire

/// This device on the network: its identity, its listening transports and the routing of
/// incoming links to invitations and sessions.
public actor Node {
    /// The node's key pair.
    public nonisolated let identity: Identity
    /// The node's peer ID: its identity's public key.
    public nonisolated let peerID: PeerID
    /// The name shown to other peers; metadata only.
    public nonisolated let displayName: String
    /// Random per process: links from the same two incarnations may join one channel.
    nonisolated let token: [UInt8]
    /// The media the node listens and dials on.
    public nonisolated let transports: [Transport]
    /// Media set up on demand inside a session (Wi-Fi Direct): see `LinkUpgrader`.
    public nonisolated let upgraders: [LinkUpgrader]
    /// The upgraders' plug-ins (all of PeerLink's upgraders are).
    package nonisolated let plugins: [any LinkUpgrading]
    /// Set-ups being taken down (`LinkUpgrader.leave`), waited for by `Session.disconnect()`.
    nonisolated let pendingTeardowns = PendingWork()
    /// Most invitations awaiting an answer at once; more are declined.
    public nonisolated let maxPendingInvitations: Int
    /// How long an unauthenticated connection may take to complete the handshake and invite.
    public nonisolated let handshakeTimeout: Duration

    private var listeners: [Medium: TransportListener] = [:]
    /// UDP socket for unreliable datagrams on IP links (nil when disabled or not bindable).
    private var udp: UDPSocket?
    /// Whether to offer UDP for unreliable messages on IP links.
    public nonisolated let datagrams: Bool
    private var invitationHandler: (@Sendable (Invitation) -> Void)?
    /// The decisions about incoming links (PeerLinkCore).
    private var desk: InvitationDesk
    /// The discovery info of the running advertiser, told in the hello (PROTOCOL §6 field 5).
    private var advertisedInfo: DiscoveryInfo?
    /// PeerLink's own protocols on this node's sessions (`NodeService`), besides resources.
    nonisolated let serviceRegistry = ServiceRegistry()
    /// The registered services.
    nonisolated var services: [any NodeService] { serviceRegistry.all }

    /// Registers a node-level service: every peer channel made from now on gets its handler,
    /// and a peer's stream named with the service's prefix goes to it. Throws when another
    /// service has the prefix, or it is not a reserved name (`peerlink/…`).
    package nonisolated func register(_ service: any NodeService) throws { try serviceRegistry.add(service) }
    /// What became of the latest incoming connections.
    nonisolated let incomingOutcomes = IncomingOutcomes()

    /// Makes a node; it listens once `start(port:)` is called. Throws when
    /// `displayName` is not valid.
    /// - Parameters:
    ///   - identity: the node's key pair; its public key is the peer ID.
    ///   - displayName: shown to other peers; metadata only (1–63 bytes of UTF-8).
    ///   - transports: the media to listen and dial on; TCP by default.
    ///   - upgraders: media that sessions negotiate when bulk traffic starts on slow links
    ///     (PeerLink's own: `WiFiDirectUpgrader`, `MemoryUpgrader`; another type is refused).
    ///   - maxPendingInvitations: most invitations awaiting an answer at once; more are declined.
    ///   - handshakeTimeout: how long an incoming connection may take to finish the handshake and
    ///     its invitation.
    ///   - datagrams: whether to offer UDP for unreliable messages on IP links.
    public init(identity: Identity, displayName: String, transports: [Transport] = [TCPTransport()],
                upgraders: [LinkUpgrader] = [],
                maxPendingInvitations: Int = 16, handshakeTimeout: Duration = .seconds(10), datagrams: Bool = true) throws {
        try Advertisement.validate(displayName: displayName)
        self.identity = identity
        self.peerID = identity.peerID
        self.displayName = displayName
        self.transports = transports
        self.upgraders = upgraders
        var plugins: [any LinkUpgrading] = []
        for u in upgraders {
            guard let plugin = u as? any LinkUpgrading else {
                throw TransportError.unsupported("\(type(of: u)) is not one of PeerLink's set-up media (WiFiDirectUpgrader, MemoryUpgrader)")
            }
            plugins.append(plugin)
        }
        self.plugins = plugins
        self.maxPendingInvitations = maxPendingInvitations
        self.desk = InvitationDesk(maxPending: maxPendingInvitations)
        self.handshakeTimeout = handshakeTimeout
        self.datagrams = datagrams
        self.token = Runtime.randomBytes(16)
    }

    /// Starts listening on every transport (once); returns the bound port of each medium.
    @discardableResult
    public func start(port: UInt16 = 0) throws -> [Medium: UInt16] {
        openDatagramSocket()
        for t in transports where listeners[t.medium] == nil {
            listeners[t.medium] = try t.listen(port: port) { [weak self] conn in
                guard let self else { conn.close(); return }
                Task { await self.handleIncoming(conn) }
            }
        }
        return listeners.mapValues { $0.port }
    }

    /// Listens with a transport outside `transports` (a negotiated medium's group); incoming
    /// links are handled as on any other listener.
    nonisolated func listen(with transport: Transport) throws -> TransportListener {
        try transport.listen(port: 0) { [weak self] conn in
            guard let self else { conn.close(); return }
            Task { await self.handleIncoming(conn) }
        }
    }

    /// Stops listening. Sessions keep their links.
    public func stop() {
        for l in listeners.values { l.close() }
        listeners.removeAll()
        udp?.close()
        udp = nil
    }

    /// Who answers invitations (set by an `Advertiser`); nil declines them all.
    func setInvitationHandler(_ h: (@Sendable (Invitation) -> Void)?) { invitationHandler = h }

    /// What the hello tells about this node's discovery info (set while an advertiser runs).
    func setAdvertisedInfo(_ info: DiscoveryInfo?) { advertisedInfo = info }

    /// The hello sent over `conn`: its max frame is what this link carries best (a smaller one
    /// on L2CAP, see `L2CAPConnection.preferredMaxFrame`), so the peer sizes its messages on
    /// this link to it (in pieces, PROTOCOL §6.3).
    func hello(for conn: MessageConnection) -> Hello {
        let maxFrame = min(conn.preferredMaxFrame ?? WireLimits.frame, WireLimits.frame)
        return Hello(displayName: displayName, maxFrame: UInt32(maxFrame), sessionToken: token, datagramPort: udp?.port,
                     discoveryInfo: advertisedInfo)
    }

    /// Opens the UDP socket once, when the node has an IP transport; failure only disables UDP.
    private func openDatagramSocket() {
        guard datagrams, udp == nil, let tcp = transports.first(where: { $0.medium == .tcp }) as? TCPTransport else { return }
        udp = try? UDPSocket(bindHost: tcp.bindHost)
    }

    private func handleIncoming(_ conn: MessageConnection) async {
        let link: SecureLink
        do {
            link = try await SecureLink.establish(over: conn, initiator: false, identity: identity, hello: hello(for: conn),
                                                  timeout: handshakeTimeout, udp: udp)
        } catch {
            incomingOutcomes.record(.handshakeFailed("\(error)"))
            return  // hostile or broken dialler: closed by establish
        }
        guard let first = try? await Node.receive(link, timeout: handshakeTimeout.inSeconds) else {
            incomingOutcomes.record(.notAnInvitation(link.remotePeer))
            link.send(.close(reason: .protocolError, text: "expected an invitation"))
            await link.connection.flush()
            link.close()
            return
        }
        let remote = link.remotePeer
        // The decision is the core's (InvitationDesk); this carries it out.
        while true {
            let joinable = await joinableSession(for: link)
            let context = InvitationDesk.Context(localPeer: peerID, remotePeer: remote, remoteToken: link.remoteHello.sessionToken,
                                                 joiningToken: accepting[remote]?.token, inSessionWithSameIncarnation: joinable != nil,
                                                 inviting: dialling[remote] != nil, hasHandler: invitationHandler != nil)
            let decision = desk.decide(first: first, context)
            guard case let .invite(id, _, invitationContext) = first else {
                if case .closeQuietly = decision {
                    // A browser that only wanted to learn who we are (PROTOCOL §14.3): nothing to answer.
                    incomingOutcomes.record(.identified(remote))
                    link.close()
                } else {
                    incomingOutcomes.record(.notAnInvitation(remote))
                    link.send(.close(reason: .protocolError, text: "expected an invitation"))
                    await link.connection.flush()
                    link.close()
                }
                return
            }
            switch decision {
            case .closeQuietly, .refuse:
                return  // only for frames other than an invitation (above)
            case .waitForFirstLink:
                // The peer's first link was just accepted and is still joining the session: its
                // other links (the peer dials them as soon as it hears the answer) wait for that.
                await accepting[remote]?.attached.value
                continue
            case .join:
                // Another link of a peer already in one of our sessions (same incarnation of
                // both nodes): it joins without asking the application again.
                incomingOutcomes.record(.joined(remote))
                link.send(.inviteReply(id: id, answer: .accepted))
                if let joinable { await joinable.attach(link, initiator: false) }
            case .crossed:
                incomingOutcomes.record(.crossed(remote, accepted: false))
                link.send(.inviteReply(id: id, answer: .crossed))
                await link.connection.flush()
                link.close()
            case .acceptIntoInvitingSession:
                incomingOutcomes.record(.crossed(remote, accepted: true))
                link.send(.inviteReply(id: id, answer: .accepted))
                if let mine = dialling[remote] { await mine.attach(link, initiator: false) }
            case .decline:
                incomingOutcomes.record(.declinedUnasked(remote))
                link.send(.inviteReply(id: id, answer: .declined))
                await link.connection.flush()
                link.close()
            case let .ask(seconds):
                guard let handler = invitationHandler else { desk.answered(); continue }
                let invitation = Invitation(peer: remote, displayName: link.remoteHello.displayName, context: invitationContext,
                                            timeout: .seconds(seconds))
                incomingOutcomes.record(.asked(remote))
                handler(invitation)
                let session = await invitation.decision()
                desk.answered()
                link.send(.inviteReply(id: id, answer: session != nil ? .accepted : .declined))
                if let session {
                    // Noted before this actor lets another link in, so that none asks again.
                    let attached = Task { _ = await session.attach(link, initiator: false) }
                    accepting[remote] = (link.remoteHello.sessionToken, attached)
                    await attached.value
                    session.joining.end()
                    if accepting[remote]?.attached == attached { accepting[remote] = nil }
                } else {
                    await link.connection.flush()
                    link.close()
                }
            }
            return
        }
    }

    // MARK: sessions known to this node

    private var sessions: [ObjectIdentifier: WeakSession] = [:]
    /// Sessions with an invitation of ours in progress, by the invited peer (tie-break).
    private var dialling: [PeerID: Session] = [:]
    /// Invitations this node accepted whose link is still joining the session, by peer (its
    /// hello's session token, and the attach).
    private var accepting: [PeerID: (token: [UInt8], attached: Task<Void, Never>)] = [:]

    /// Remembers a session that has peers, so later links of those peers can join it.
    func remember(_ session: Session) {
        sessions = sessions.filter { $0.value.session != nil }
        sessions[ObjectIdentifier(session)] = WeakSession(session: session)
    }

    /// The session whose channel to the link's peer belongs to the same incarnation.
    private func joinableSession(for link: SecureLink) async -> Session? {
        for entry in sessions.values {
            guard let s = entry.session, let c = s.registry.channel(for: link.remotePeer),
                  c.remoteToken == link.remoteHello.sessionToken, await c.isAlive else { continue }
            return s
        }
        return nil
    }

    /// Reads one frame, closing the link if none comes within `timeout` seconds.
    static func receive(_ link: SecureLink, timeout: Double) async throws -> Frame? {
        let watchdog = Task {
            try await Runtime.sleep(nanoseconds: UInt64(timeout * 1e9))
            link.close()
        }
        defer { watchdog.cancel() }
        return try await link.receive()
    }

    /// Dials a peer, authenticates it, invites it into `session` and returns once it accepted.
    /// Endpoints are tried in the order the session's link policy prefers (Bluetooth first by
    /// default); once one link is up, the session's link manager adds links on the peer's
    /// other paths in the background. Throws if every endpoint fails, the key does not belong
    /// to `peer.peerID`, the peer declines, or no answer comes within `timeout` seconds.
    public func invite(_ peer: PeerInfo, to session: Session, context: [UInt8] = [], timeout: Duration = .seconds(30)) async throws {
        let limit = timeout, timeout = timeout.inSeconds
        guard context.count <= WireLimits.inviteContext else {
            throw WireError.limitExceeded(field: "invitation context size", value: context.count, limit: WireLimits.inviteContext)
        }
        let paths = LinkPaths.select(peer.endpoints, policy: session.policy.kind, media: Set(transports.map(\.medium)))
        let alreadyConnected = session.registry.channel(for: peer.peerID) != nil
        if !alreadyConnected { dialling[peer.peerID] = session }
        defer { if dialling[peer.peerID] === session { dialling[peer.peerID] = nil } }
        var failures: [DialFailure] = []
        // Happy eyeballs: paths in the policy's order, each next one 250 ms later (or at once
        // when the ones in flight failed); the first authenticated link is invited.
        var remaining = paths.map(\.endpoint)
        while !remaining.isEmpty {
            let race = await DialRace.first(remaining) { [self] ep in try await self.dial(ep, expecting: peer.peerID, timeout: timeout) }
            failures += race.failures
            guard let (link, endpoint) = race.winner else { break }
            remaining.removeAll { $0 == endpoint }
            let connected = session.registry.channel(for: peer.peerID) != nil
            if !connected { session.emit(.peerStateChanged(peer.peerID, displayName: link.remoteHello.displayName, state: .connecting)) }
            func failed() {
                if session.registry.channel(for: peer.peerID) == nil {
                    session.emit(.peerStateChanged(peer.peerID, displayName: link.remoteHello.displayName, state: .notConnected))
                }
            }
            switch try await requestJoin(link, context: context, timeout: timeout) {
            case .accepted:
                if !alreadyConnected, session.registry.channel(for: peer.peerID) != nil {
                    // Crossed invitations: the peer's own invitation joined it meanwhile (it won
                    // the tie-break); this second link on the same path is surplus.
                    link.close()
                    return
                }
                let id = await session.attach(link, initiator: true)
                await session.manager(for: peer.peerID).start(node: self, info: peer, first: endpoint, link: id)
                return
            case .declined:
                link.close()
                failed()
                throw PeerLinkError.invitationDeclined(peer.peerID)
            case .crossed:
                // The peer invites us at the same moment and its invitation wins: we accept
                // it automatically (handleIncoming); wait for that link to join the session.
                link.close()
                if await session.waitForChannel(peer.peerID, timeout: timeout) { return }
                failed()
                throw PeerLinkError.invitationTimedOut(peer.peerID, after: limit)
            }
        }
        if failures.isEmpty { failures.append(DialFailure(endpoint: nil, reason: .noUsableEndpoint)) }
        throw PeerLinkError.unreachable(peer.peerID, failures: failures)
    }

    /// Connects to `endpoint` and runs the handshake, checking the peer's identity.
    func dial(_ endpoint: TransportEndpoint, expecting peer: PeerID, timeout: Double, using given: Transport? = nil) async throws -> SecureLink {
        guard let transport = given ?? transports.first(where: { $0.medium == endpoint.medium }) else {
            throw DialFailure(endpoint: endpoint, reason: .noTransport(endpoint.medium))
        }
        openDatagramSocket()
        let conn = try await transport.connect(to: endpoint, timeout: .seconds(min(timeout, 10)))
        return try await SecureLink.establish(over: conn, initiator: true, identity: identity, hello: hello(for: conn),
                                              expecting: peer, timeout: handshakeTimeout, udp: udp)
    }

    /// Sends the invitation on a fresh link and waits for the answer.
    func requestJoin(_ link: SecureLink, context: [UInt8], timeout: Double) async throws -> InviteAnswer {
        let id = UInt32(truncatingIfNeeded: Runtime.random() % UInt64(UInt32.max)) + 1
        link.send(.invite(id: id, timeoutMillis: UInt32(min(timeout, 300) * 1000), context: context))
        let reply: Frame?
        do {
            reply = try await Node.receive(link, timeout: timeout + 2)
        } catch {
            link.close()
            throw PeerLinkError.invitationTimedOut(link.remotePeer, after: .seconds(timeout))
        }
        guard case let .inviteReply(rid, answer)? = reply, rid == id else {
            link.close()
            if reply == nil { throw PeerLinkError.invitationTimedOut(link.remotePeer, after: .seconds(timeout)) }
            throw LinkError.protocolError("expected an answer to the invitation")
        }
        return answer
    }
}

/// A session a node remembers without keeping it alive.
struct WeakSession {
    weak var session: Session?
}
