import PeerLinkWire

/// Negotiates, with one peer of a session, an extra link on a medium that has to be set up
/// first (a Wi-Fi Direct group, a soft-AP): propose, accept or reject, the host forms the group
/// and says how to reach it, the joiner joins and dials, the new link joins the session; after
/// a quiet spell, or when the link dies, the set-up is taken down. Sans-I/O: the edge feeds it
/// messages, local results and the time, and carries out its actions.
///
/// One negotiation at a time per peer. Crossed proposals: the session initiator's goes ahead.
package struct LinkUpgrade: Sendable {
    package struct Config: Sendable, Equatable {
        /// Milliseconds to wait for an answer to a proposal.
        package var answerTimeout: UInt64 = 10_000
        /// Milliseconds allowed from acceptance to the new link joining the session.
        package var setupTimeout: UInt64 = 60_000
        /// Milliseconds without bulk traffic after which the set-up is taken down (0: never).
        package var idleTeardown: UInt64 = 60_000
        /// Milliseconds before proposing again after a refusal or failure.
        package var retryAfter: UInt64 = 30_000
        package init() {}
    }

    /// Which end of the set-up a side takes.
    package enum Role: UInt8, Sendable, Equatable {
        case host = 1, join = 2
        var other: Role { self == .host ? .join : .host }
    }

    /// Where the current negotiation stands.
    package enum Phase: String, Sendable, Equatable {
        case idle
        /// We proposed and wait for the answer.
        case proposed
        /// We host and are forming the group.
        case hosting
        /// We host, said how to reach us, and wait for the joiner's link.
        case ready
        /// We join and wait for the host's parameters.
        case awaitingHost
        /// We join: joining the group and dialling.
        case joining
        /// The new link is in the session.
        case up
    }

    /// What the edge must do.
    package enum Action: Sendable, Equatable {
        /// Send this step to the peer (inside the session).
        case send(LinkSetup)
        /// Form the group and listen on it; answer with `hosted` or `failed`.
        case host(id: UInt32, medium: String)
        /// We will join: get ready while the host forms its group (e.g. put the radio under
        /// wpa_supplicant), so that `join` has less to do once the parameters arrive. Needs no
        /// answer; a `leave` for the same id always follows, whether or not `join` came.
        case prepare(id: UInt32, medium: String)
        /// Join the host's group with these parameters and dial it; answer with `linkUp` or `failed`.
        case join(id: UInt32, medium: String, parameters: [LinkSetup.Parameter])
        /// Undo what `host` or `join` set up (leave the group, close its link).
        case leave(id: UInt32, medium: String, reason: String)
        /// For the timeline (`peerlink links`, session events).
        case event(UpgradeEvent)
    }

    /// Local abilities per medium, set by the edge from the medium's plug-in.
    package struct Availability: Sendable, Equatable {
        package var roles: LinkSetup.Roles
        /// Why the medium cannot be used here, when `roles` is empty.
        package var reason: String
        package init(roles: LinkSetup.Roles, reason: String = "") { self.roles = roles; self.reason = reason }
    }

    package let config: Config
    /// True on the side that sent the session's first invitation (wins crossed proposals).
    package let initiator: Bool
    package private(set) var phase: Phase = .idle
    /// The negotiation in progress (or up).
    package private(set) var current: (id: UInt32, medium: String, role: Role?)?
    private var availability: [String: Availability] = [:]
    private var nextID: UInt32
    private var proposedAt: UInt64 = 0
    private var stepAt: UInt64 = 0
    private var lastBulk: UInt64 = 0
    private var quietUntil: UInt64 = 0
    private var actions: [Action] = []
    /// Per medium, the reason it could not be proposed that the timeline last showed.
    private var toldUnavailable: [String: String] = [:]

    package init(initiator: Bool, config: Config = Config()) {
        self.initiator = initiator
        self.config = config
        nextID = initiator ? 1 : 2
    }

    /// Tells what this side can do with `medium` (empty roles and a reason: it cannot).
    package mutating func setAvailability(_ medium: String, _ a: Availability) { availability[medium] = a }

    /// Whether availability for `medium` was set.
    package func knows(_ medium: String) -> Bool { availability[medium] != nil }
    /// Whether actions are waiting to be taken.
    package var hasActions: Bool { !actions.isEmpty }

    /// The actions produced so far, in order; clears them.
    package mutating func takeActions() -> [Action] {
        defer { actions = [] }
        return actions
    }

    // MARK: local inputs

    /// Proposes a link on `medium` (bulk traffic started, or the policy asks). Returns false
    /// when a negotiation is under way or up, the last one failed recently, or this side
    /// cannot use the medium; in that last case the timeline says why (`unavailable`, once
    /// per reason), since nothing else would tell the user why bulk stays on a slow link.
    @discardableResult
    package mutating func propose(_ medium: String, reason: String, now: UInt64) -> Bool {
        guard phase == .idle, now >= quietUntil, let a = availability[medium] else { return false }
        guard !a.roles.isEmpty else {
            let why = a.reason.isEmpty ? "this side can neither host nor join" : a.reason
            if toldUnavailable[medium] != why {
                toldUnavailable[medium] = why
                actions.append(.event(UpgradeEvent(id: 0, medium: medium, step: .unavailable, sinceProposal: .zero, sinceLastStep: .zero,
                                                   detail: "not proposed for \(reason): \(why)")))
            }
            return false
        }
        let id = nextID
        nextID &+= 2
        current = (id, medium, nil)
        phase = .proposed
        proposedAt = now
        stepAt = now
        lastBulk = now
        actions.append(.send(LinkSetup(id: id, step: .propose, medium: medium, parameters: [.init("roles", [a.roles.rawValue])], text: reason)))
        note(.proposed, reason, now)
        return true
    }

    /// Bulk traffic moved (a resource or stream byte, either way): keeps the set-up alive.
    package mutating func bulkActivity(now: UInt64) { lastBulk = now }

    /// The group is formed and we listen on it; `parameters` tell the joiner how to reach us.
    package mutating func hosted(_ id: UInt32, parameters: [LinkSetup.Parameter], detail: String = "", now: UInt64) {
        guard let c = current, c.id == id, phase == .hosting else { return }
        phase = .ready
        actions.append(.send(LinkSetup(id: id, step: .ready, medium: c.medium, parameters: parameters)))
        note(.hosted, detail, now)
        stepAt = now
    }

    /// A link of the negotiated medium joined the session (either side).
    package mutating func linkUp(_ id: UInt32, detail: String = "", now: UInt64) {
        guard let c = current, c.id == id, phase == .ready || phase == .joining else { return }
        phase = .up
        lastBulk = max(lastBulk, now)
        note(.linkUp, detail, now)
        stepAt = now
    }

    /// The negotiated link left the session (radio gone, group torn down by the system).
    package mutating func linkDown(_ id: UInt32, reason: String, now: UInt64) {
        guard let c = current, c.id == id, phase == .up else { return }
        finish(sending: .teardown, reason: "the link went down: \(reason)", now: now, quiet: 0)
    }

    /// A local step (forming, joining, dialling) failed.
    package mutating func failed(_ id: UInt32, reason: String, now: UInt64) {
        guard let c = current, c.id == id, phase != .idle else { return }
        finish(sending: .failed, reason: reason, now: now, quiet: config.retryAfter)
    }

    /// Takes down whatever is set up (the node is leaving, or the user asked).
    package mutating func stop(reason: String, now: UInt64) {
        guard phase != .idle else { return }
        finish(sending: .teardown, reason: reason, now: now, quiet: 0)
    }

    /// When `tick` may next time something out (nil: nothing waits for time). Never in the past.
    package func nextDeadline(now: UInt64) -> UInt64? {
        let t: UInt64?
        switch phase {
        case .idle: t = nil
        case .proposed: t = stepAt + config.answerTimeout
        case .hosting, .ready, .awaitingHost, .joining: t = proposedAt + config.setupTimeout
        case .up: t = config.idleTeardown > 0 ? lastBulk + config.idleTeardown : nil
        }
        return t.map { max($0, now + 1) }
    }

    /// Timeouts and idle teardown.
    package mutating func tick(now: UInt64) {
        switch phase {
        case .idle:
            return
        case .proposed:
            if now >= stepAt + config.answerTimeout {
                finish(sending: nil, reason: "no answer to the proposal within \(Self.seconds(config.answerTimeout))", now: now, quiet: config.retryAfter)
            }
        case .hosting, .ready, .awaitingHost, .joining:
            if now >= proposedAt + config.setupTimeout {
                finish(sending: .failed, reason: "set-up timed out while \(phase.describing) (\(Self.seconds(config.setupTimeout)))", now: now,
                       quiet: config.retryAfter)
            }
        case .up:
            if config.idleTeardown > 0, now >= lastBulk + config.idleTeardown {
                finish(sending: .teardown, reason: "no bulk traffic for \(Self.seconds(config.idleTeardown))", now: now, quiet: 0)
            }
        }
    }

    // MARK: from the peer

    /// A LINK_SETUP from the peer.
    package mutating func received(_ m: LinkSetup, now: UInt64) {
        switch m.step {
        case .propose:
            receivedProposal(m, now: now)
        case .accept:
            guard let c = current, c.id == m.id, phase == .proposed else { return }
            guard let raw = m.value("role")?.first, m.value("role")?.count == 1, let ourRole = Role(rawValue: raw) else {
                return finish(sending: .failed, reason: "the peer's acceptance names no valid role", now: now, quiet: config.retryAfter)
            }
            let mine = availability[c.medium]?.roles ?? []
            guard mine.contains(ourRole == .host ? .host : .join) else {
                return finish(sending: .failed, reason: "the peer asked us to \(ourRole == .host ? "host" : "join"), which we cannot",
                              now: now, quiet: config.retryAfter)
            }
            start(ourRole, id: c.id, medium: c.medium, now: now)
            note(.accepted, "we \(ourRole == .host ? "host" : "join")", now)
        case .reject:
            guard let c = current, c.id == m.id, phase == .proposed else { return }
            current = nil
            phase = .idle
            quietUntil = now + config.retryAfter
            note(.rejected, m.text, now, id: c.id, medium: c.medium)
        case .ready:
            guard let c = current, c.id == m.id, phase == .awaitingHost else { return }
            phase = .joining
            note(.ready, "", now)
            stepAt = now
            actions.append(.join(id: c.id, medium: c.medium, parameters: m.parameters))
        case .failed, .teardown:
            guard let c = current, c.id == m.id, phase != .idle else { return }
            let why = m.text.isEmpty ? "no reason given" : m.text
            let quiet = m.step == .failed ? config.retryAfter : 0
            finish(sending: nil, reason: "the peer \(m.step == .failed ? "failed" : "took it down"): \(why)", now: now, quiet: quiet)
        }
    }

    private mutating func receivedProposal(_ m: LinkSetup, now: UInt64) {
        func reject(_ why: String) {
            actions.append(.send(LinkSetup(id: m.id, step: .reject, medium: m.medium, text: why)))
            note(.refused, why, now, id: m.id, medium: m.medium)
        }
        if phase == .proposed, let c = current {
            if initiator { return reject("crossed proposals: ours (\(c.id)) goes ahead") }
            // The initiator's proposal wins: ours is dropped (its reject will be ignored).
            current = nil
            phase = .idle
        }
        guard phase == .idle else { return reject("a set-up of \(current?.medium ?? "a link") is already \(phase.describing)") }
        guard let roles = m.value("roles"), roles.count == 1 else { return reject("the proposal names no roles") }
        let theirs = LinkSetup.Roles(rawValue: roles[0])
        guard let mine = availability[m.medium], !mine.roles.isEmpty else {
            let why = availability[m.medium]?.reason ?? ""
            return reject("this peer cannot use \(m.medium)\(why.isEmpty ? "" : ": \(why)")")
        }
        let proposerRole: Role
        if theirs.contains(.host), mine.roles.contains(.join) {
            proposerRole = .host
        } else if theirs.contains(.join), mine.roles.contains(.host) {
            proposerRole = .join
        } else {
            return reject("no roles fit: the proposer can \(theirs.describing), this peer can \(mine.roles.describing)")
        }
        current = (m.id, m.medium, nil)
        proposedAt = now
        stepAt = now
        lastBulk = now
        note(.receivedProposal, m.text, now)
        actions.append(.send(LinkSetup(id: m.id, step: .accept, medium: m.medium, parameters: [.init("role", [proposerRole.rawValue])])))
        start(proposerRole.other, id: m.id, medium: m.medium, now: now)
    }

    private mutating func start(_ role: Role, id: UInt32, medium: String, now: UInt64) {
        current = (id, medium, role)
        stepAt = now
        if role == .host {
            phase = .hosting
            actions.append(.host(id: id, medium: medium))
        } else {
            phase = .awaitingHost
            actions.append(.prepare(id: id, medium: medium))
        }
    }

    private mutating func finish(sending step: LinkSetup.Step?, reason: String, now: UInt64, quiet: UInt64) {
        guard let c = current else { return }
        if let step { actions.append(.send(LinkSetup(id: c.id, step: step, medium: c.medium, text: reason))) }
        if c.role != nil { actions.append(.leave(id: c.id, medium: c.medium, reason: reason)) }
        note(phase == .up || step == .teardown ? .tornDown : .failed, reason, now)
        current = nil
        phase = .idle
        quietUntil = now + quiet
    }

    /// "60 s", "0.6 s".
    static func seconds(_ ms: UInt64) -> String {
        ms % 1000 == 0 ? "\(ms / 1000) s" : "\(Double(ms) / 1000) s"
    }

    private mutating func note(_ step: UpgradeEvent.Step, _ detail: String, _ now: UInt64, id: UInt32? = nil, medium: String? = nil) {
        guard let id = id ?? current?.id, let medium = medium ?? current?.medium else { return }
        actions.append(.event(UpgradeEvent(id: id, medium: medium, step: step, sinceProposal: .milliseconds(clamping: now &- proposedAt),
                                           sinceLastStep: .milliseconds(clamping: now &- stepAt), detail: detail)))
    }
}

/// One step of a link negotiation, for the timeline.
public struct UpgradeEvent: Sendable, Equatable {
    /// A step of the negotiation; the raw value is its name in logs and JSON ("link-up").
    public enum Step: String, Sendable, Equatable, Codable {
        /// This side proposed the medium.
        case proposed
        /// The peer proposed it.
        case receivedProposal = "received-proposal"
        /// This side accepted the peer's proposal, or the peer accepted this side's.
        case accepted
        /// The peer rejected this side's proposal.
        case rejected
        /// This side refused the peer's proposal (crossed proposals, busy, cannot serve it).
        case refused
        /// This side formed the group.
        case hosted
        /// The group is ready for the peer to join.
        case ready
        /// A link over the medium came up.
        case linkUp = "link-up"
        /// The negotiation failed.
        case failed
        /// The negotiated link was taken down.
        case tornDown = "torn-down"
        /// Bulk traffic started but this side cannot use the medium (id 0: nothing was sent).
        case unavailable
    }
    /// The negotiation's ID, chosen by the side that proposed it.
    public var id: UInt32
    /// The medium's name (e.g. "wifi-direct").
    public var medium: String
    /// What happened.
    public var step: Step
    /// Time since the proposal was sent or received (whole milliseconds).
    public var sinceProposal: Duration
    /// Time since the previous step (whole milliseconds).
    public var sinceLastStep: Duration
    /// Why (refusals, failures, teardowns) or what was decided.
    public var detail: String
}

extension LinkUpgrade.Phase {
    var describing: String {
        switch self {
        case .idle: return "idle"
        case .proposed: return "waiting for an answer"
        case .hosting: return "forming the group"
        case .ready: return "waiting for the peer to join"
        case .awaitingHost: return "waiting for the host"
        case .joining: return "joining and dialling"
        case .up: return "up"
        }
    }
}

extension LinkSetup.Roles {
    var describing: String {
        switch (contains(.host), contains(.join)) {
        case (true, true): return "host or join"
        case (true, false): return "only host"
        case (false, true): return "only join"
        case (false, false): return "neither"
        }
    }
}
