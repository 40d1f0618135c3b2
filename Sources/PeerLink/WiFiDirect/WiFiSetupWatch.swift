/// Decides, from wpa_supplicant's signals alone, when a set-up in progress is done: a network
/// on the radio reaching `completed` (soft-AP up, station associated with keys installed), a
/// P2P group started in the expected role, or a failure wpa_supplicant reported. Pure: fed one
/// signal at a time, it returns a verdict or nil (keep waiting), so a failure ends the set-up
/// when wpa_supplicant says so instead of at the set-up timeout.
///
/// What ends it at once: `PskMismatch`, `GroupFormationFailure`, `GONegotiationFailure`, a
/// failed `InvitationResult`, `WpsFailed`, `interface_disabled`, wpa_supplicant leaving the
/// bus. What counts as one failed attempt (wpa_supplicant retries; the set-up ends after
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
        if case let .p2pGroup(role) = goal, s.path == radioPath, s.interface == WPASupplicantBus.p2pAPI {
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
        if s.member == "PskMismatch" { return .failed(.wrongPassphrase) }
        guard s.member == "PropertiesChanged", let c = WPAProperties.interfaceChange(s.args) else { return nil }
        if c.state == .interfaceDisabled { return .failed(.interfaceDisabled) }
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
