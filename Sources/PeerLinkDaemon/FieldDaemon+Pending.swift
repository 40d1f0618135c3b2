import Foundation
import PeerLink

/// The pending list (`accept = "known"`): an invitation from a peer not in the trust store
/// waits for the owner's answer through the API (`GET /v1/pending`, `POST /v1/pending/{peer}`,
/// `peerlink pending`) for as long as the invitation's own timeout allows (at most 300 s),
/// and is declined when that passes. A peer the owner adds to the trust store meanwhile
/// (`peerlink trust add`) is accepted at the next tick. The peer asks again while its daemon
/// holds items for this node (after its invitation ended, `inviteBackoff` later), so a late
/// answer is not lost: a peer the owner trusts is accepted by the trust rule at its next
/// invitation.
extension FieldDaemon {
    /// Monotonic seconds, for invitation timeouts and backoffs (virtual ones in a simulation).
    nonisolated var uptime: Double { Runtime.seconds() }

    /// Lists an invitation from a peer not in the trust store until its timeout passes.
    func holdForOwner(_ inv: Invitation) {
        let now = uptime
        lapsePending(now: now)
        guard pending.hasRoom(for: inv.peer) else {
            log.warning("declined invitation: the pending list is full", metadata: ["peer": "\(inv.displayName) [\(inv.peer)]",
                                                                                   "listed": "\(pending.capacity)"])
            inv.decline()
            return
        }
        let context = String(bytes: inv.context, encoding: .utf8) ?? ""
        let (isNew, superseded) = pending.ask(peer: inv.peer, name: inv.displayName, context: context, timeout: inv.timeout.inSeconds,
                                              ticket: inv, now: now, wall: clock().millisecondsSince1970)
        // The peer asked again before its earlier invitation lapsed: the latest one is answered.
        if let superseded, superseded !== inv { superseded.decline() }
        let wait = min(max(inv.timeout.inSeconds, 0), PendingList<Invitation>.longestWait)
        log.notice("invitation from a peer not in the trust store waits for the owner's answer",
                   metadata: ["peer": "\(inv.displayName) [\(inv.peer)]", "seconds": "\(Int(wait))",
                              "answer": "peerlink pending accept \(inv.peer)"])
        if isNew { events.publish(.peerPending, peer: inv.peer.description, name: inv.displayName, reason: context.isEmpty ? nil : context) }
        Task { [weak self] in
            try? await Runtime.sleep(seconds: wait)
            await self?.lapsePending(now: nil)
        }
    }

    /// Accepts the waiting invitations of listed peers the owner has trusted meanwhile.
    func admitNewlyTrusted() {
        let now = uptime
        let listed = pending.list(now: now)
        guard !listed.isEmpty else { return }
        let trusted = parts.trust.trustedPeers()
        for p in listed where trusted[p.peer] != nil {
            guard case let .waiting(entry, invitation) = pending.answer(p.peer, now: now).answer else { continue }
            invitation.accept(into: session)
            log.notice("a pending peer is now in the trust store: accepted", metadata: ["peer": "\(entry.name) [\(p.peer)]"])
            events.publish(.peerAccepted, peer: p.peer.description, name: entry.name, reason: "trusted")
        }
    }

    /// Declines the listed invitations whose timeout has passed.
    func lapsePending(now: Double?) {
        for inv in pending.expire(now: now ?? uptime) {
            log.info("pending invitation lapsed unanswered", metadata: ["peer": "\(inv.displayName) [\(inv.peer)]"])
            inv.decline()
        }
    }

    public func apiPending() async -> [PendingPeer] {
        let now = uptime
        lapsePending(now: now)
        return pending.list(now: now)
    }

    public func apiAnswerPending(_ text: String, _ answer: PendingAnswer) async throws(APIError) -> PendingOutcome {
        let now = uptime
        lapsePending(now: now)
        if answer == .unblock { return try await unblock(text) }
        let peer: PeerID
        switch pending.resolve(text) {
        case let .success(p): peer = p
        case let .failure(why): throw APIError(404, "not_pending", why.description)
        }
        if case .accept(trust: false, _) = answer, pending.list(now: now).first(where: { $0.peer == peer })?.waiting != true {
            throw APIError(409, "not_waiting", "\(text)'s invitation lapsed and accepting it once needs one waiting; "
                           + "accept with trust (the default) so its next invitation is taken, or answer when it asks again")
        }
        let entry: PendingPeer, waiting: Invitation?
        switch pending.answer(peer, now: now).answer {
        case let .waiting(e, ticket): entry = e; waiting = ticket
        case let .lapsed(e): entry = e; waiting = nil
        case .unknown: throw APIError(404, "not_pending", "no pending peer '\(text)' (it was answered meanwhile)")
        }
        let who = "\(entry.name) [\(peer)]"
        switch answer {
        case .decline:
            waiting?.decline()
            log.notice("owner declined a pending peer", metadata: ["peer": "\(who)"])
            events.publish(.peerDeclined, peer: peer.description, name: entry.name)
            return PendingOutcome(peer: peer.description, name: entry.name, answer: "declined", trusted: false,
                                  invitationAnswered: waiting != nil)
        case .block:
            waiting?.decline()
            let store = parts.trust, name = entry.name
            let failure = await Runtime.offload("pl.api.block") { () -> String? in
                do { try store.block(peer, name: name); return nil } catch { return "\(error)" }
            }
            if let failure { throw APIError(500, "trust_store", "could not block \(who) in \(store.blockPath): \(failure)") }
            log.notice("owner blocked a pending peer: its invitations are declined unasked", metadata: ["peer": "\(who)"])
            events.publish(.peerDeclined, peer: peer.description, name: entry.name, reason: "blocked")
            return PendingOutcome(peer: peer.description, name: entry.name, answer: "blocked", trusted: false,
                                  invitationAnswered: waiting != nil)
        case .unblock:
            throw APIError(500, "internal", "unblock is answered before the pending list is read")
        case let .accept(trust, name):
            if trust {
                let store = parts.trust, label = name ?? entry.name
                let failure = await Runtime.offload("pl.api.trust") { () -> String? in
                    do { try store.trust(peer, name: label, verification: .firstUse); return nil } catch { return "\(error)" }
                }
                if let failure {
                    waiting?.decline()
                    throw APIError(500, "trust_store", "could not add \(who) to the trust store \(store.trustPath): \(failure)")
                }
            }
            waiting?.accept(into: session)
            log.notice("owner accepted a pending peer", metadata: ["peer": "\(who)", "trusted": "\(trust)",
                                                                  "invitation": "\(waiting != nil ? "accepted now" : "lapsed; its next one is taken")"])
            events.publish(.peerAccepted, peer: peer.description, name: entry.name, reason: trust ? "trusted" : "accepted once")
            return PendingOutcome(peer: peer.description, name: entry.name, answer: "accepted",
                                  trusted: parts.trust.trustedPeers()[peer] != nil, invitationAnswered: waiting != nil)
        }
    }

    /// Takes a blocked peer (full ID, unique ID prefix of 4+ characters, or name) off the block list.
    private func unblock(_ text: String) async throws(APIError) -> PendingOutcome {
        let store = parts.trust
        let blocked = await Runtime.offload("pl.api.block") { store.blockedPeers() }
        let lower = text.lowercased()
        let hits = blocked.filter { $0.key.description == lower || $0.value == text || (lower.count >= 4 && $0.key.description.hasPrefix(lower)) }
        guard hits.count == 1, let (peer, name) = hits.first else {
            throw APIError(hits.isEmpty ? 404 : 409, hits.isEmpty ? "not_blocked" : "ambiguous",
                           hits.isEmpty ? "no blocked peer '\(text)' (blocked: \(blocked.isEmpty ? "none" : blocked.map { "\($0.value) [\($0.key)]" }.sorted().joined(separator: ", ")))"
                                        : "'\(text)' matches \(hits.count) blocked peers: \(hits.keys.map(\.description).sorted().joined(separator: ", "))")
        }
        let failure = await Runtime.offload("pl.api.block") { () -> String? in
            do { try store.unblock(peer); return nil } catch { return "\(error)" }
        }
        if let failure { throw APIError(500, "trust_store", "could not unblock \(name) [\(peer)] in \(store.blockPath): \(failure)") }
        log.notice("owner unblocked a peer: it is listed again when it asks", metadata: ["peer": "\(name) [\(peer)]"])
        return PendingOutcome(peer: peer.description, name: name, answer: "unblocked", trusted: false, invitationAnswered: false)
    }
}
