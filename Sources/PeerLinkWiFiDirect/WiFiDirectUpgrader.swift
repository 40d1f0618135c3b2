import Foundation
import PeerLink
import PeerLinkCore
import PeerLinkWire
import Synchronization

/// The Wi-Fi Direct medium's plug-in for negotiated links: forms a group (Wi-Fi Direct group
/// owner, or a soft-AP where the radio lacks P2P) through the system's wpa_supplicant when the
/// session asks it to host, joins the peer's group when it asks it to join, and leaves the
/// group when the negotiation ends. Register it with `Node(upgraders:)`.
public final class WiFiDirectUpgrader: LinkUpgrading, Sendable {
    public let medium = Medium.wifiDirect
    public let transport: Transport = WiFiDirectTransport()
    /// The wpa_supplicant client that forms, joins and leaves the groups.
    public let wifi: WiFiDirect
    /// The radio asked for (`--wifi`), or nil for the first one that can do it.
    public let requestedInterface: String?
    private struct State {
        var chosen: (interface: String, report: WiFiRadioReport)?
        var groups: [UpgradeID: (group: WiFiGroup, listener: TransportListener?, ahead: Duration?)] = [:]
        /// Joins being prepared (`prepare`), so that `join` and `leave` wait for them; each
        /// says how long putting the radio under wpa_supplicant took (nil: it failed).
        var preparing: [UpgradeID: Task<Duration?, Never>] = [:]
        /// One per `standBy` not yet stood down: the radio it holds under wpa_supplicant (nil
        /// when none could be chosen).
        var standing: [Task<String?, Never>] = []
    }
    private let state = Mutex(State())

    /// Makes an upgrader that drives groups through `wifi` on the radio `interface`, or with nil
    /// on the first radio that can form or join one.
    public init(wifi: WiFiDirect = WiFiDirect(), interface: String? = nil) {
        self.wifi = wifi
        self.requestedInterface = interface
    }

    /// The radio used and what it can do, or why none can be used.
    func radio() async -> Result<(interface: String, report: WiFiRadioReport), WiFiDirectUnavailable> {
        if let c = state.withLock({ $0.chosen }) { return .success(c) }
        let names: [String]
        if let requestedInterface { names = [requestedInterface] } else { names = await wifi.radios().map(\.interface) }
        guard !names.isEmpty else { return .failure(WiFiDirectUnavailable("this machine has no Wi-Fi radio")) }
        var reasons: [String] = []
        for n in names {
            do {
                let r = try await wifi.probe(interface: n)
                if r.p2p.available || r.softAP.available {
                    state.withLock { $0.chosen = (n, r) }
                    return .success((n, r))
                }
                reasons.append("\(n): \(r.p2p.detail)")
            } catch {
                reasons.append("\(n): \(error)")
            }
        }
        return .failure(WiFiDirectUnavailable(reasons.joined(separator: "; ")))
    }

    package func availability() async -> LinkUpgrade.Availability {
        switch await radio() {
        case .success: return LinkUpgrade.Availability(roles: [.host, .join])
        case let .failure(why): return LinkUpgrade.Availability(roles: [], reason: why.description)
        }
    }

    package func host(_ id: UpgradeID, listen: @escaping @Sendable (Transport) throws -> TransportListener) async throws -> [LinkSetup.Parameter] {
        await radioStandingBy()
        let (interface, report) = try await radio().get()
        let group = report.p2p.available
            // The joiner needs longer to join and dial than DAD takes here (~1 s): the address
            // goes out at once, and a joiner that is faster retries its dial.
            ? try await wifi.formGroup(interface: interface, waitForDAD: false)
            : try await wifi.startSoftAP(interface: interface)
        do {
            let listener = try listen(WiFiDirectTransport(interface: group.interface))
            state.withLock { $0.groups[id] = (group, listener, nil) }
            return WiFiDirectParameters(credentials: group.credentials, address: group.linkLocalAddress, port: listener.port).encoded
        } catch {
            await wifi.leave(group)
            throw error
        }
    }

    /// Puts the radio under wpa_supplicant and keeps it there while a session stands by, so
    /// that neither forming nor joining a group waits for `CreateInterface`. A radio that
    /// wpa_supplicant already manages (NetworkManager's) is left as it is.
    public func standBy() {
        let task = Task { [self] () -> String? in
            guard case let .success((interface, _)) = await radio() else { return nil }
            _ = try? await wifi.holdRadio(interface: interface)
            return interface
        }
        state.withLock { $0.standing.append(task) }
    }

    /// Ends one `standBy`; after the last, the radio goes back as it was unless a group uses it.
    public func standDown() async {
        guard let task = state.withLock({ $0.standing.isEmpty ? nil : $0.standing.removeFirst() }) else { return }
        if let interface = await task.value { await wifi.releaseRadio(interface: interface) }
    }

    /// Waits for a radio still being put under wpa_supplicant by `standBy`, rather than
    /// adding it a second time beside it.
    private func radioStandingBy() async {
        for t in state.withLock({ $0.standing }) { _ = await t.value }
    }

    /// Puts the radio under wpa_supplicant while the host forms its group (the first step of
    /// joining, which needs no credentials).
    public func prepare(_ id: UpgradeID) {
        let task = Task { [self] () -> Duration? in
            guard case let .success((interface, _)) = await radio() else { return nil }
            return try? await wifi.prepareToJoin(interface: interface)
        }
        state.withLock { $0.preparing[id] = task }
    }

    package func join(_ id: UpgradeID, parameters: [LinkSetup.Parameter]) async throws -> TransportEndpoint {
        await radioStandingBy()
        let ahead = await state.withLock({ $0.preparing[id] })?.value ?? nil
        let p = try WiFiDirectParameters(parameters)
        let (interface, _) = try await radio().get()
        let group = try await wifi.joinGroup(interface: interface, credentials: p.credentials)
        state.withLock { $0.groups[id] = (group, nil, ahead) }
        return TransportEndpoint(medium: .wifiDirect, host: LinkLocalSockets.scoped(p.address, interface: group.interface), port: p.port)
    }

    /// "go on p2p-wlan0-0: add-interface 0.41 s, start-group 0.18 s, link-local 0.00 s
    /// (optimistic)"; a joiner's says what it did ahead ("radio added ahead in 0.45 s").
    public func setUpSummary(_ id: UpgradeID) -> String {
        guard let g = state.withLock({ $0.groups[id] }) else { return "" }
        return Self.summary(g.group, ahead: g.ahead)
    }

    static func summary(_ g: WiFiGroup, ahead: Duration?) -> String {
        func text(_ d: Duration) -> String { String(format: "%.2f s", d.inSeconds) }
        var steps = g.timings.map { t in
            "\(t.step.rawValue) \(text(t.duration))" + (t.step == .linkLocal && g.linkLocalState != .usable ? " (\(g.linkLocalState.rawValue))" : "")
        }
        if let ahead, ahead > .zero { steps.insert("add-interface \(text(ahead)) ahead", at: 0) }
        return "\(g.role.rawValue) on \(g.interface): " + (steps.isEmpty ? "no steps" : steps.joined(separator: ", "))
    }

    public func leave(_ id: UpgradeID) async {
        let (g, prepared) = state.withLock { s in (s.groups.removeValue(forKey: id), s.preparing.removeValue(forKey: id)) }
        _ = await prepared?.value
        guard let g else {
            // Prepared for a join that never came: the radio goes back as it was.
            if prepared != nil { await wifi.releaseUnusedRadios() }
            return
        }
        g.listener?.close()
        await wifi.leave(g.group)
    }
}

/// Why this machine cannot use Wi-Fi Direct (shown to the peer and in the timeline).
public struct WiFiDirectUnavailable: Error, CustomStringConvertible {
    public let description: String
    init(_ d: String) { description = d }
}
