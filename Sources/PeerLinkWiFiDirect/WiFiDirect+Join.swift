import Foundation
import PeerLink
import PeerLinkDBus

extension WiFiDirect {
    /// Joins the group described by `credentials` (received from its owner) from
    /// `interface`, without a P2P find of the whole spectrum and without WPS. Returns once
    /// this side's link-local address on the joined interface is usable.
    ///
    /// `.automatic` joins a Wi-Fi Direct group as a P2P client, which leaves the radio's own
    /// interface (and any network it is on) alone, and joins a soft-AP (or any group when
    /// this radio has no P2P) as a station, unless NetworkManager manages the interface.
    public func joinGroup(interface: String, credentials: WiFiCredentials, method: WiFiJoinMethod = .automatic,
                          timeout: Duration = .seconds(30)) async throws -> WiFiGroup {
        try credentials.validate()
        return try await offThePool { try self.joinBlocking(interface, credentials, method, budget: StepBudget(timeout)) }
    }

    /// Does the first step of a join ahead of the owner's credentials: puts `interface` under
    /// wpa_supplicant when it is not yet (`CreateInterface`, 0.25–1.65 s in the lab), so that
    /// `joinGroup` starts without it. Until a group uses the radio, the next `leave` or
    /// `releaseUnusedRadios()` takes it out again. Returns how long that took (zero when
    /// wpa_supplicant already had the radio).
    public func prepareToJoin(interface: String) async throws -> Duration {
        try await offThePool { try self.addRadio(interface) }
    }

    /// Takes out of wpa_supplicant the radios PeerLink added that no group uses and no one
    /// holds (after a `prepareToJoin` whose join never came). Best effort.
    public func releaseUnusedRadios() async {
        _ = try? await offThePool {
            guard let bus = try? self.connection() else { return }
            self.releaseRadios(bus)
        }
    }

    func joinBlocking(_ radio: String, _ creds: WiFiCredentials, _ asked: WiFiJoinMethod, budget: StepBudget) throws -> WiFiGroup {
        try WiFiRadios.require(radio, sysClassNet: sysClassNet)
        let bus = try connection()
        try requireSupplicant(bus)
        var timings = StepTimings()
        return try usingRadio(bus, radio, timings: &timings) { radioPath, timings in
            try join(bus, radio: radio, radioPath: radioPath, creds, asked, timings: &timings, budget: budget)
        }
    }

    func join(_ bus: WPASupplicantBus, radio: String, radioPath: String, _ creds: WiFiCredentials, _ asked: WiFiJoinMethod,
              timings: inout StepTimings, budget: StepBudget) throws -> WiFiGroup {
        let devices = (try? Nl80211.devices()) ?? nil
        let p2pProblem: Error? = { do { try requireP2P(bus, radio: radio, radioPath: radioPath, devices: devices); return nil } catch { return error } }()
        let nm = NetworkManagerProbe.status(of: radio, bus: bus)
        let method = try Self.chooseJoinMethod(asked, kind: creds.kind, p2pProblem: p2pProblem, networkManager: nm, radio: radio)
        var live: LiveGroup
        switch method {
        case .p2pClient:
            live = try joinAsP2PClient(bus, radio: radio, radioPath: radioPath, creds, timings: &timings, budget: budget)
        case .station, .automatic:
            let network: [String: DBusValue] = [
                "ssid": .string(creds.ssid), "psk": .string(creds.passphrase), "scan_freq": .string(String(creds.frequency)),
                "bssid": .string(creds.bssid.description), "key_mgmt": .string("WPA-PSK"), "proto": .string("RSN"),
                "pairwise": .string("CCMP"), "group": .string("CCMP"),
            ]
            live = try connectNetwork(bus, radio: radio, radioPath: radioPath, role: .station, network: network, credentials: creds,
                                      timings: &timings, budget: budget)
        }
        do {
            live.group.linkLocalAddress = try timings.measure(.linkLocal) {
                try waitLinkLocal(live.group.interface, hosting: false, budget: budget)
            }.address
            live.group.timings = timings.steps
            register(live)
            return live.group
        } catch {
            leaveBlocking(live.group.id)
            throw error
        }
    }

    /// Which way to join. Pure.
    static func chooseJoinMethod(_ asked: WiFiJoinMethod, kind: WiFiCredentials.Kind, p2pProblem: Error?,
                                 networkManager: NetworkManagerStatus, radio: String) throws -> WiFiJoinMethod {
        let stationProblem: String? = networkManager.manages
            ? "NetworkManager manages \(radio); joining as a station would take it from NetworkManager" : nil
        switch asked {
        case .p2pClient:
            if let p2pProblem { throw p2pProblem }
            return .p2pClient
        case .station:
            if let stationProblem { throw WiFiError.unsupported(interface: radio, why: stationProblem) }
            return .station
        case .automatic:
            let p2pOK = p2pProblem == nil
            if kind == .p2pGroup, p2pOK { return .p2pClient }
            if stationProblem == nil { return .station }
            if p2pOK { return .p2pClient }
            throw WiFiError.unsupported(interface: radio, why: "\(stationProblem ?? "") and P2P is unavailable (\(p2pProblem.map { "\($0)" } ?? ""))")
        }
    }

    /// A P2P client from a persistent-group profile built from the credentials. When the
    /// owner's device address is known, a P2P find on the group's frequency first puts the
    /// owner in wpa_supplicant's scan results, so that the client scans that one channel
    /// instead of all of them (wpa_supplicant 2.10 ignores GroupAdd's frequency for a client).
    func joinAsP2PClient(_ bus: WPASupplicantBus, radio: String, radioPath: String, _ creds: WiFiCredentials,
                         timings: inout StepTimings, budget: StepBudget) throws -> LiveGroup {
        var profile: [String: DBusValue] = ["ssid": .string(creds.ssid), "psk": .string(creds.passphrase)]
        if let owner = creds.ownerDeviceAddress, creds.kind == .p2pGroup {
            let peerSuffix = "/Peers/" + owner.pathComponent
            let found = bus.signals.expect { s in
                s.path == radioPath && s.member == "DeviceFound" && (WPAProperties.text(s.args.first)?.hasSuffix(peerSuffix) ?? false)
            }
            let seen: Bool = try timings.measure(.findOwner) {
                let find = DBusValue.propertyDictionary(["Timeout": .int32(5), "freq": .int32(Int32(creds.frequency))])
                do { _ = try bus.call(radioPath, WPASupplicantBus.p2pAPI, "Find", [find]) } catch {
                    found.cancel()
                    throw error
                }
                let s = found.wait(seconds: min(5, budget.remaining))
                _ = try? bus.call(radioPath, WPASupplicantBus.p2pAPI, "StopFind")
                return s != nil
            }
            // Not seen: the client scans every channel (slower, still works).
            if seen { profile["bssid"] = .string(owner.description) }
        }
        let started = bus.signals.watch(WiFiSetupWatch(goal: .p2pGroup(role: "client"), radioPath: radioPath))
        var persistent: String?
        defer { if let p = persistent { _ = try? bus.call(radioPath, WPASupplicantBus.p2pAPI, "RemovePersistentGroup", [.objectPath(p)]) } }
        let (verdict, watch) = try timings.measure(.joinGroup) {
            do {
                let r = try bus.call(radioPath, WPASupplicantBus.p2pAPI, "AddPersistentGroup", [.propertyDictionary(profile)])
                guard let p = WPAProperties.text(r.first) else { throw WiFiError.malformedReply("AddPersistentGroup returned no path") }
                persistent = p
                let add = DBusValue.propertyDictionary(["persistent_group_object": .objectPath(p), "frequency": .int32(Int32(creds.frequency))])
                _ = try bus.call(radioPath, WPASupplicantBus.p2pAPI, "GroupAdd", [add])
            } catch {
                started.cancel()
                throw error
            }
            return started.wait(seconds: budget.remaining)
        }
        let sig: WPAGroupSignal
        do {
            sig = try Self.groupStarted(verdict, step: .joinGroup, budget: budget)
        } catch {
            // wpa_supplicant would keep trying until its own group formation timeout: stop it,
            // and end the group interface the attempt made.
            _ = try? bus.call(radioPath, WPASupplicantBus.p2pAPI, "Cancel")
            for g in watch.groupInterfaces { _ = try? bus.call(g, WPASupplicantBus.p2pAPI, "Disconnect") }
            throw error
        }
        var live = LiveGroup(group: WiFiGroup(id: WiFiGroupID(), role: .p2pClient, interface: "", radio: radio, credentials: creds,
                                              linkLocalAddress: "", joinMethod: .p2pClient, timings: []),
                             radioPath: radioPath, groupInterfacePath: sig.interfaceObject, groupObject: sig.groupObject,
                             networkPath: nil, reenable: [])
        register(live)
        do {
            live.group.interface = try bus.interfaceInfo(sig.interfaceObject).ifname
            // A client's Group.BSSID reads 00:00:00:00:00:00 in wpa_supplicant 2.10: the
            // access point it is associated with is its interface's CurrentBSS.
            let info = try WPAProperties.group(bus.groupProperties(sig.groupObject))
            let joined = info.bssid.isZero ? bus.currentBSSID(sig.interfaceObject) : info.bssid
            if let joined, joined != creds.bssid {
                throw WiFiError.failed(step: WiFiStep.joinGroup.rawValue, why: "joined \(joined), not the owner \(creds.bssid) (another group with the same SSID?)")
            }
            register(live)
            return live
        } catch {
            leaveBlocking(live.group.id)
            throw error
        }
    }
}
