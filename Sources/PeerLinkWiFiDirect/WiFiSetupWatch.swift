import PeerLink
/// Decides, from wpa_supplicant's signals alone, when a set-up in progress is done: a network
/// on the radio reaching `completed` (soft-AP up, station associated with keys installed), a
/// P2P group started in the expected role, or a failure wpa_supplicant reported. Pure: fed one
/// signal at a time, it returns a verdict or nil (keep waiting), so a failure ends the set-up
/// when wpa_supplicant says so instead of at the set-up timeout.
///
/// What ends it at once: a wrong passphrase (`PskMismatch`, or, in wpa_supplicant 2.10 which
/// has no such signal, a `DisconnectReason` while in `4way_handshake`, except this side's
/// "IE in 4-way differs"), `GroupFormationFailure`, `GONegotiationFailure`, a failed
/// `InvitationResult`, `WpsFailed` (P2P signals from the radio or a group interface that
/// appeared during the set-up), `interface_disabled`, wpa_supplicant leaving the bus. What
/// counts as one failed attempt (wpa_supplicant retries; the set-up ends after
/// `attemptsAllowed`): a non-zero `AuthStatusCode` or `AssocStatusCode`, a `DisconnectReason`
/// from the other side. This side's own disconnects (negative reasons, e.g. leaving the
/// network `SelectNetwork` replaced) do not count.
struct WiFiSetupWatch: Sendable, Equatable {
    enum Goal: Sendable, Equatable {
        /// A network added to the radio itself (soft-AP or station).
        case network
        /// A P2P group in this role (`GroupStarted`'s "GO" or "client").
        case p2pGroup(role: String)
    }

    enum Verdict: Sendable, Equatable {
        /// The radio's network reached `completed`.
        case completed
        /// The P2P group started in the expected role.
        case groupStarted(WPAGroupSignal)
        case failed(WiFiSetupFailure)
    }

    let goal: Goal
    let radioPath: String
    var attemptsAllowed = 3
    /// The interfaces whose connection attempts count: the radio, and P2P group interfaces
    /// that appeared during the set-up (a P2P client connects from its group interface).
    private(set) var watched: Set<String>
    /// Group interfaces that appeared during the set-up (to remove after a failure).
    private(set) var groupInterfaces: [String] = []
    private(set) var failedAttempts = 0
    private(set) var verdict: Verdict?
    /// The last `State` each watched interface reported.
    private var states: [String: WPAState] = [:]

    init(goal: Goal, radioPath: String) {
        self.goal = goal
        self.radioPath = radioPath
        watched = [radioPath]
    }

    /// Takes one signal; returns the verdict once there is one (and the same verdict after).
    mutating func handle(_ s: WPASignal) -> Verdict? {
        if let verdict { return verdict }
        verdict = decide(s)
        return verdict
    }

    private mutating func decide(_ s: WPASignal) -> Verdict? {
        if s.isSupplicantGone { return .failed(.supplicantStopped) }
        if case .p2pGroup = goal, s.member == "InterfaceAdded", s.interface == WPASupplicantBus.service,
           let (path, name) = WPAProperties.interfaceAdded(s.args), name.hasPrefix("p2p-"), !name.hasPrefix("p2p-dev-") {
            watched.insert(path)
            groupInterfaces.append(path)
            return nil
        }
        // wpa_supplicant sends a P2P client's GroupFormationFailure from its group interface.
        if case let .p2pGroup(role) = goal, watched.contains(s.path), s.interface == WPASupplicantBus.p2pAPI {
            switch s.member {
            case "GroupStarted":
                guard let g = try? WPAProperties.groupSignal(s.args), g.role == role else { return nil }
                return .groupStarted(g)
            case "GroupFormationFailure": return .failed(.groupFormation(WPAProperties.text(s.args.first) ?? ""))
            case "GONegotiationFailure": return .failed(.goNegotiation(status: WPAProperties.p2pStatus(s.args) ?? -1))
            case "InvitationResult":
                guard let status = WPAProperties.p2pStatus(s.args), status != 0 else { return nil }
                return .failed(.invitation(status: status))
            case "WpsFailed": return .failed(.wps(configError: WPAProperties.wpsConfigError(s.args)))
            default: return nil
            }
        }
        guard watched.contains(s.path), s.interface == WPASupplicantBus.interfaceAPI else { return nil }
        if s.member == "PskMismatch" { return .failed(.wrongPassphrase(evidence: "PskMismatch")) }
        guard s.member == "PropertiesChanged", let c = WPAProperties.interfaceChange(s.args) else { return nil }
        let before = states[s.path]
        if let st = c.state { states[s.path] = st }
        if c.state == .interfaceDisabled { return .failed(.interfaceDisabled) }
        // wpa_supplicant's could_be_psk_mismatch(): the link dropped during the PSK 4-way
        // handshake, unless this side dropped it because the AP's IEs differed (reason 17).
        if let reason = c.disconnectReason, reason != 0, reason != -17, before == .fourWayHandshake || c.state == .fourWayHandshake {
            return .failed(.wrongPassphrase(evidence: "the 4-way handshake failed: DisconnectReason \(reason)"))
        }
        if goal == .network, s.path == radioPath, c.state == .completed { return .completed }
        var attempt: WiFiSetupFailure.Attempt?
        if let code = c.authStatus, code != 0 { attempt = .authenticationRejected(status: code) }
        if let code = c.assocStatus, code != 0 { attempt = .associationRejected(status: code) }
        if let reason = c.disconnectReason, reason > 0 { attempt = .disconnected(reason: reason) }
        guard let attempt else { return nil }
        failedAttempts += 1
        return failedAttempts >= attemptsAllowed ? .failed(.attemptsFailed(count: failedAttempts, last: attempt)) : nil
    }
}
