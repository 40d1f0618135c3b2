import ArgumentParser
import Foundation
import PeerLink

/// A node that advertises a service and answers invitations into one session.
struct Hosting {
    let node: Node
    let store: IdentityStore
    let session: Session
    let advertiser: Advertiser
    let output: Output

    static func start(_ options: NodeOptions, command: String, info: DiscoveryInfo, accept: AcceptOptions,
                      config: SessionConfig = SessionConfig()) async throws -> Hosting {
        let service = try options.serviceType()
        let (node, store, plan) = try await options.makeNode()
        let out = Output(json: options.json)
        for note in plan.notes { out.note(note) }
        let session = Session(node: node, config: config, policy: try options.linkPolicy())
        let adv = Advertiser(node: node, service: service, info: info, discoveries: plan.discoveries(for: node))
        do {
            try await adv.start()
        } catch {
            throw RuntimeFailure("cannot advertise: \(error) (run `peerlink doctor`)")
        }
        let h = Hosting(node: node, store: store, session: session, advertiser: adv, output: out)
        _ = ControlServer.start(command: command, node: node, session: session, output: out)
        out.emit("advertising '\(service)' as \(node.displayName) [\(node.peerID)] on \(plan.summary(service))",
                 ["event": "advertising", "service": service.name, "peer": node.peerID.description, "name": node.displayName])
        Task { for await n in adv.notices { out.emit("note: \(n)", ["event": "notice", "text": n]) } }
        Task { await h.answerInvitations(accept) }
        installSignalHandlers { await h.finish() }
        return h
    }

    /// Leaves the session and stops advertising, which puts back what advertising changed
    /// (a Bluetooth adapter made connectable).
    func finish() async {
        await session.disconnect()
        await advertiser.stop()
    }

    private func answerInvitations(_ accept: AcceptOptions) async {
        for await inv in advertiser.invitations {
            let who = "\(inv.displayName) [\(inv.peer)]"
            let context = String(decoding: inv.context, as: UTF8.self)
            var accepted = false
            if accept.acceptAll {
                accepted = true
            } else if accept.acceptKnown {
                accepted = store.trustedPeers()[inv.peer] != nil
                if !accepted { output.note("declined invitation from \(who): not in the trust store (peerlink trust add \(inv.peer))") }
            } else {
                stderrLine("Invitation from \(who)\(context.isEmpty ? "" : " saying '\(context)'"). Accept? [y]es / [n]o / [a]lways: ")
                let answer = await LineReader.shared.next(prompt: true)?.lowercased().trimmingCharacters(in: .whitespaces) ?? ""
                accepted = answer == "y" || answer == "yes" || answer == "a" || answer == "always"
                if answer.hasPrefix("a") { try? store.trust(inv.peer, name: inv.displayName, verification: .firstUse) }
            }
            output.emit("\(accepted ? "accepted" : "declined") invitation from \(who)",
                        ["event": "invitation", "peer": inv.peer.description, "name": inv.displayName,
                         "context": context, "accepted": accepted])
            if accepted { inv.accept(into: session) } else { inv.decline() }
        }
    }
}

/// Prints peer state, link and message events; returns handled=false for events left to the caller.
func printCommon(_ e: Session.Event, names: NameBook, out: Output, showMessages: Bool = true) {
    switch e {
    case let .peerStateChanged(peer, name, state):
        names.set(peer, name)
        out.emit("\(name) [\(peer.short)] \(state == .connected ? "connected" : state == .connecting ? "connecting" : "not connected")",
                 ["event": "state", "peer": peer.description, "name": name, "state": state.rawValue])
    case let .message(from, bytes, mode) where showMessages:
        let text = String(decoding: bytes, as: UTF8.self)
        out.emit("\(names.name(from)): \(text)",
                 ["event": "message", "peer": from.description, "name": names.name(from), "text": text, "mode": mode.rawValue])
    case let .linkChanged(peer, link, medium, up, reason):
        out.emit("link \(link) to \(names.name(peer)) over \(medium.rawValue) \(up ? "up" : "down"): \(reason)",
                 ["event": "link", "peer": peer.description, "link": link, "medium": medium.rawValue, "up": up, "reason": reason.description])
    case let .carrierChanged(peer, link, role, reason):
        out.emit("\(role.rawValue) traffic to \(names.name(peer)) now on link \(link): \(reason)",
                 ["event": "carrier", "peer": peer.description, "link": link, "role": role.rawValue, "reason": reason.description])
    case let .linkAttemptFailed(peer, endpoint, failure, retryIn):
        out.emit("could not add a link to \(names.name(peer)) via \(endpoint): \(failure.explanation) (retry in \(Int(retryIn / .seconds(1))) s)",
                 ["event": "link-attempt-failed", "peer": peer.description, "endpoint": endpoint.description, "reason": failure.explanation, "retryIn": retryIn / .seconds(1)])
    case let .linkUpgrade(peer, u):
        let text = u.step == .unavailable ? "\(u.medium) with \(names.name(peer)): \(u.detail)"
            : "\(u.medium) with \(names.name(peer)): \(u.step.rawValue) after \(u.sinceLastStep.milliseconds) ms (\(u.sinceProposal.milliseconds) ms since the proposal)"
                + (u.detail.isEmpty ? "" : ": \(u.detail)")
        out.emit(text,
                 ["event": "upgrade", "peer": peer.description, "medium": u.medium, "id": u.id, "step": u.step.rawValue,
                  "stepMillis": u.sinceLastStep.milliseconds, "sinceProposalMillis": u.sinceProposal.milliseconds, "detail": u.detail])
    default:
        break
    }
}

/// Display names of peers seen so far.
final class NameBook: @unchecked Sendable {
    private let lock = NSLock()
    private var names: [PeerID: String] = [:]
    func set(_ p: PeerID, _ n: String) { lock.withLock { names[p] = n } }
    func name(_ p: PeerID) -> String { lock.withLock { names[p] } ?? p.short }
}
