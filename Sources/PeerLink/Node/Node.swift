import Foundation
@preconcurrency import Crypto

/// This device on the network: its identity, its listening transports and the routing of
/// incoming links to invitations and sessions.
public actor Node {
    public nonisolated let identity: Identity
    public nonisolated let peerID: PeerID
    public nonisolated let displayName: String
    /// Random per process: links from the same two incarnations may join one channel.
    nonisolated let token: [UInt8]
    public nonisolated let transports: [Transport]
    /// Most invitations awaiting an answer at once; more are declined.
    public nonisolated let maxPendingInvitations: Int
    /// Seconds an unauthenticated connection may take to complete the handshake and invite.
    public nonisolated let handshakeTimeout: Double

    private var listeners: [Medium: TransportListener] = [:]
    /// UDP socket for unreliable datagrams on IP links (nil when disabled or not bindable).
    private var udp: UDPSocket?
    /// Whether to offer UDP for unreliable messages on IP links.
    public nonisolated let datagrams: Bool
    private var invitationHandler: (@Sendable (Invitation) -> Void)?
    private var pendingInvitations = 0

    /// - Parameters:
    ///   - displayName: shown to other peers; metadata only (1–63 bytes of UTF-8).
    ///   - transports: the media to listen and dial on; TCP by default.
    public init(identity: Identity, displayName: String, transports: [Transport] = [TCPTransport()],
                maxPendingInvitations: Int = 16, handshakeTimeout: Double = 10, datagrams: Bool = true) throws {
        try Advertisement.validate(displayName: displayName)
        self.identity = identity
        self.peerID = identity.peerID
        self.displayName = displayName
        self.transports = transports
        self.maxPendingInvitations = maxPendingInvitations
        self.handshakeTimeout = handshakeTimeout
        self.datagrams = datagrams
        var t = [UInt8](repeating: 0, count: 16)
        for i in t.indices { t[i] = UInt8.random(in: 0...255) }
        self.token = t
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

    /// Stops listening. Sessions keep their links.
    public func stop() {
        for l in listeners.values { l.close() }
        listeners.removeAll()
        udp?.close()
        udp = nil
    }

    /// Who answers invitations (set by an `Advertiser`); nil declines them all.
    func setInvitationHandler(_ h: (@Sendable (Invitation) -> Void)?) { invitationHandler = h }

    func hello() -> Hello { Hello(displayName: displayName, sessionToken: token, datagramPort: udp?.port) }

    /// Opens the UDP socket once, when the node has an IP transport; failure only disables UDP.
    private func openDatagramSocket() {
        guard datagrams, udp == nil, let tcp = transports.first(where: { $0.medium == .tcp }) as? TCPTransport else { return }
        udp = try? UDPSocket(bindHost: tcp.bindHost)
    }

    private func handleIncoming(_ conn: MessageConnection) async {
        let link: SecureLink
        do {
            link = try await SecureLink.establish(over: conn, initiator: false, identity: identity, hello: hello(),
                                                  timeout: handshakeTimeout, udp: udp)
        } catch {
            return  // hostile or broken dialler: closed by establish
        }
        guard let first = try? await Node.receive(link, timeout: handshakeTimeout),
              case let .invite(id, timeoutMillis, context) = first else {
            link.send(.close(reason: .protocolError, text: "expected an invitation"))
            await link.connection.flush()
            link.close()
            return
        }
        guard let handler = invitationHandler, pendingInvitations < maxPendingInvitations else {
            link.send(.inviteReply(id: id, accepted: false))
            await link.connection.flush()
            link.close()
            return
        }
        pendingInvitations += 1
        let seconds = min(max(Double(timeoutMillis) / 1000, 1), 300)
        let invitation = Invitation(peer: link.remotePeer, displayName: link.remoteHello.displayName, context: context, timeout: seconds)
        handler(invitation)
        let session = await invitation.decision()
        pendingInvitations -= 1
        link.send(.inviteReply(id: id, accepted: session != nil))
        if let session {
            await session.attach(link, initiator: false)
        } else {
            await link.connection.flush()
            link.close()
        }
    }

    /// Reads one frame, closing the link if none comes within `timeout` seconds.
    static func receive(_ link: SecureLink, timeout: Double) async throws -> Frame? {
        let watchdog = Task {
            try await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
            link.close()
        }
        defer { watchdog.cancel() }
        return try await link.receive()
    }

    /// Dials a peer on its endpoints (in order), authenticates it, invites it into `session`
    /// and returns once it accepted. Throws if every endpoint fails, the key does not belong
    /// to `peer.peerID`, the peer declines, or no answer comes within `timeout` seconds.
    public func invite(_ peer: PeerInfo, to session: Session, context: [UInt8] = [], timeout: Double = 30) async throws {
        guard context.count <= WireLimits.inviteContext else {
            throw WireError.limitExceeded(field: "invitation context size", value: context.count, limit: WireLimits.inviteContext)
        }
        openDatagramSocket()
        var reasons: [String] = []
        for endpoint in peer.endpoints {
            guard let transport = transports.first(where: { $0.medium == endpoint.medium }) else { continue }
            let link: SecureLink
            do {
                let conn = try await transport.connect(to: endpoint, timeout: min(timeout, 10))
                link = try await SecureLink.establish(over: conn, initiator: true, identity: identity, hello: hello(),
                                                      expecting: peer.peerID, timeout: handshakeTimeout, udp: udp)
            } catch {
                reasons.append("\(endpoint): \(error)")
                continue
            }
            let id = UInt32.random(in: 1...UInt32.max)
            let alreadyConnected = session.registry.channel(for: peer.peerID) != nil
            if !alreadyConnected { session.emit(.peerStateChanged(peer.peerID, displayName: link.remoteHello.displayName, state: .connecting)) }
            func failed() {
                if !alreadyConnected { session.emit(.peerStateChanged(peer.peerID, displayName: link.remoteHello.displayName, state: .notConnected)) }
            }
            link.send(.invite(id: id, timeoutMillis: UInt32(min(timeout, 300) * 1000), context: context))
            let reply: Frame?
            do {
                reply = try await Node.receive(link, timeout: timeout + 2)
            } catch {
                link.close()
                failed()
                throw PeerLinkError.invitationTimedOut(peer.peerID, seconds: timeout)
            }
            guard case let .inviteReply(rid, accepted)? = reply, rid == id else {
                link.close()
                failed()
                if reply == nil { throw PeerLinkError.invitationTimedOut(peer.peerID, seconds: timeout) }
                throw LinkError.protocolError("expected an answer to the invitation")
            }
            guard accepted else {
                link.close()
                failed()
                throw PeerLinkError.invitationDeclined(peer.peerID)
            }
            await session.attach(link, initiator: true)
            return
        }
        if reasons.isEmpty { reasons.append("no endpoint on a medium this node has") }
        throw PeerLinkError.unreachable(peer.peerID, reasons: reasons)
    }
}
