import Foundation
import PeerLinkCore
import PeerLinkWire

/// The edge of `LinkUpgrade` for one peer: proposes a set-up medium (Wi-Fi Direct) when bulk
/// traffic starts while only Bluetooth links are up, carries out the negotiation's actions
/// with the medium's plug-in off this actor, and reports each step as a session event.
extension PeerChannel {
    /// Learns what each registered upgrader can do here (once per channel, off this actor).
    func learnUpgradeAvailability() {
        let upgraders = session.node.plugins
        guard !upgraders.isEmpty else { return }
        Task { [weak self] in
            for u in upgraders {
                let a = await u.availability()
                await self?.setAvailability(u.medium, a)
            }
        }
    }

    private func setAvailability(_ medium: Medium, _ a: LinkUpgrade.Availability) {
        upgrade.setAvailability(medium.rawValue, a)
        if let pending = pendingBulkReason { pendingBulkReason = nil; bulkStarting(pending) }
    }

    /// Bulk traffic (a file or stream) is starting: propose a faster link if only slow ones
    /// are up and a set-up medium is available.
    func bulkStarting(_ what: String) {
        let now = Runtime.milliseconds()
        upgrade.bulkActivity(now: now)
        guard !ended, upgrade.phase == .idle, linkSet.bulkWantsFasterLink(sharedMinor: core.sharedMinor) else { return }
        var known = false
        for u in session.node.plugins {
            known = known || upgrade.knows(u.medium.rawValue)
            if upgrade.propose(u.medium.rawValue, reason: what, now: now) { break }
        }
        if !known, !session.node.plugins.isEmpty { pendingBulkReason = what }
        runUpgradeActions()
    }

    /// Bulk work for the peer is still under way (a file being hashed before its offer).
    func bulkContinues() { upgrade.bulkActivity(now: Runtime.milliseconds()) }

    /// A LINK_SETUP from the peer.
    func receivedLinkSetup(_ m: LinkSetup) {
        upgrade.received(m, now: Runtime.milliseconds())
        runUpgradeActions()
    }

    /// A link joined: it may be the negotiated one.
    func upgradeNoticeLinkUp(_ link: SecureLink) {
        guard let c = upgrade.current, link.medium.rawValue == c.medium, upgrade.phase == .ready || upgrade.phase == .joining else { return }
        upgradeLink = link.id
        // The joiner's steps (the host's went with `hosted`).
        let detail = c.role == .join ? upgrader(c.medium)?.setUpSummary(UpgradeID(peer: peer, id: c.id)) ?? "" : ""
        upgrade.linkUp(c.id, detail: detail, now: Runtime.milliseconds())
        runUpgradeActions()
    }

    /// A link left: if it was the negotiated one, the set-up is taken down (traffic falls back).
    func upgradeNoticeLinkDown(_ id: LinkID, reason: String) {
        guard id == upgradeLink, let c = upgrade.current else { return }
        upgradeLink = nil
        upgrade.linkDown(c.id, reason: reason, now: Runtime.milliseconds())
        runUpgradeActions()
    }

    func upgradeTick(now: UInt64) {
        guard upgrade.phase != .idle else { return }
        upgrade.tick(now: now)
        runUpgradeActions()
    }

    /// Carries out what the negotiation asked for.
    func runUpgradeActions() {
        let actions = upgrade.takeActions()
        guard !actions.isEmpty else { return }
        for action in actions {
            switch action {
            case let .send(m):
                do { try core.sendLinkSetup(m, now: Runtime.milliseconds()) } catch {
                    upgrade.failed(m.id, reason: "cannot tell the peer: \(error)", now: Runtime.milliseconds())
                }
            case let .host(id, medium):
                guard let u = upgrader(medium) else { upgrade.failed(id, reason: "no \(medium) plug-in", now: Runtime.milliseconds()); continue }
                let key = UpgradeID(peer: peer, id: id), node = session.node
                Task { [weak self] in
                    do {
                        let params = try await u.host(key) { t in try node.listen(with: t) }
                        await self?.hosted(id, params, detail: u.setUpSummary(key))
                    } catch {
                        await self?.upgradeFailed(id, "forming the \(medium) group failed: \(error)")
                    }
                }
            case let .prepare(id, medium):
                // Started here, in order, so that a later `leave` finds it (a missing plug-in
                // is reported by `join`).
                upgrader(medium)?.prepare(UpgradeID(peer: peer, id: id))
            case let .join(id, medium, parameters):
                guard let u = upgrader(medium) else { upgrade.failed(id, reason: "no \(medium) plug-in", now: Runtime.milliseconds()); continue }
                let key = UpgradeID(peer: peer, id: id), node = session.node, session = self.session, peer = self.peer
                Task { [weak self] in
                    do {
                        let endpoint = try await u.join(key, parameters: parameters)
                        let link = try await Self.dialSetUp(node, endpoint, expecting: peer, using: u.transport)
                        guard try await node.requestJoin(link, context: [], timeout: 10) == .accepted else {
                            link.close()
                            throw PeerLinkError.invitationDeclined(peer)
                        }
                        await session.attach(link, initiator: true)
                    } catch {
                        await self?.upgradeFailed(id, "joining the \(medium) group failed: \(error)")
                    }
                }
            case let .leave(id, medium, _):
                if let l = upgradeLink, let link = links[l], link.medium.rawValue == medium {
                    upgradeLink = nil
                    linkGone(l, reason: .setUpTakenDown(medium: link.medium))
                }
                if let u = upgrader(medium) {
                    let key = UpgradeID(peer: peer, id: id)
                    session.node.pendingTeardowns.start { await u.leave(key) }
                }
            case let .event(e):
                upgradeHistory.append(UpgradeRecord(e, at: Runtime.wallClock()))
                if upgradeHistory.count > 32 { upgradeHistory.removeFirst(upgradeHistory.count - 32) }
                session.emit(.linkUpgrade(peer, e))
            }
        }
        process()
        // Sending may have produced more (a failure to send).
        if upgrade.hasActions { runUpgradeActions() }
    }

    /// Dial attempts on a negotiated link, and the pause between them.
    static let setUpDials = 4
    static let setUpDialPause: UInt64 = 500_000_000

    /// Dials the host's endpoint, again while it is unreachable: a host hands its address out
    /// while its DAD may still run (about a second), and until then the kernel answers no
    /// neighbour solicitation for it.
    static func dialSetUp(_ node: Node, _ endpoint: TransportEndpoint, expecting peer: PeerID, using transport: Transport) async throws -> SecureLink {
        var attempt = 1
        while true {
            do {
                return try await node.dial(endpoint, expecting: peer, timeout: 10, using: transport)
            } catch let TransportError.system(_, errno) where attempt < setUpDials && [EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL].contains(errno) {
                attempt += 1
                try await Runtime.sleep(nanoseconds: setUpDialPause)
            }
        }
    }

    private func hosted(_ id: UInt32, _ params: [LinkSetup.Parameter], detail: String) {
        upgrade.hosted(id, parameters: params, detail: detail, now: Runtime.milliseconds())
        runUpgradeActions()
    }

    private func upgradeFailed(_ id: UInt32, _ why: String) {
        upgrade.failed(id, reason: why, now: Runtime.milliseconds())
        runUpgradeActions()
    }

    private func upgrader(_ medium: String) -> (any LinkUpgrading)? {
        session.node.plugins.first { $0.medium.rawValue == medium }
    }
}
