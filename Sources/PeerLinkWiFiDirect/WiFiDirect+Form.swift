import Foundation
import PeerLink
import PeerLinkDBus

extension WiFiDirect {
    /// Forms an autonomous Wi-Fi Direct group on `interface` (`P2PDevice.GroupAdd`) with this
    /// node as group owner, and returns what a peer needs to join it, once the group
    /// interface's link-local address is usable (or optimistic). With `waitForDAD` false it
    /// returns as soon as the address is known, while DAD may still run for about a second
    /// (`linkLocalState`): for a caller whose peer needs longer than that to join and dial.
    /// `frequency` (MHz) picks the channel; wpa_supplicant chooses when nil.
    public func formGroup(interface: String, frequency: Int? = nil, waitForDAD: Bool = true,
                          timeout: Duration = .seconds(30)) async throws -> WiFiGroup {
        if let f = frequency, !WiFiChannels.isValidFrequency(f) { throw WiFiError.invalidArgument("\(f) MHz is not a Wi-Fi channel") }
        return try await offThePool {
            try self.formGroupBlocking(interface, frequency: frequency, waitForDAD: waitForDAD, budget: StepBudget(timeout))
        }
    }

    /// Starts a WPA2-PSK access point on `interface` itself (a mode-2 network through
    /// `AddNetwork`/`SelectNetwork`), the fallback where P2P is unavailable. The radio leaves
    /// any network it was on until `leave`.
    public func startSoftAP(interface: String, frequency: Int = 2437, timeout: Duration = .seconds(30)) async throws -> WiFiGroup {
        guard WiFiChannels.isValidFrequency(frequency) else { throw WiFiError.invalidArgument("\(frequency) MHz is not a Wi-Fi channel") }
        return try await offThePool { try self.startSoftAPBlocking(interface, frequency: frequency, budget: StepBudget(timeout)) }
    }

    func formGroupBlocking(_ radio: String, frequency: Int?, waitForDAD: Bool = true, budget: StepBudget) throws -> WiFiGroup {
        try WiFiRadios.require(radio, sysClassNet: sysClassNet)
        let bus = try connection()
        try requireSupplicant(bus)
        var timings = StepTimings()
        return try usingRadio(bus, radio, timings: &timings) { radioPath, timings in
            try formGroup(bus, radio: radio, radioPath: radioPath, frequency: frequency, waitForDAD: waitForDAD, timings: &timings,
                          budget: budget)
        }
    }

    func formGroup(_ bus: WPASupplicantBus, radio: String, radioPath: String, frequency: Int?, waitForDAD: Bool,
                   timings: inout StepTimings, budget: StepBudget) throws -> WiFiGroup {
        let devices = (try? Nl80211.devices()) ?? nil
        try requireP2P(bus, radio: radio, radioPath: radioPath, devices: devices)

        let started = bus.signals.watch(WiFiSetupWatch(goal: .p2pGroup(role: "GO"), radioPath: radioPath))
        var args: [String: DBusValue] = [:]
        if let frequency { args["frequency"] = .int32(Int32(frequency)) }
        let verdict: WiFiSetupWatch.Verdict? = try timings.measure(.startGroup) {
            do { _ = try bus.call(radioPath, WPASupplicantBus.p2pAPI, "GroupAdd", [.propertyDictionary(args)]) } catch {
                started.cancel()
                throw error
            }
            return started.wait(seconds: budget.remaining).verdict
        }
        let sig = try Self.groupStarted(verdict, step: .startGroup, budget: budget)
        // From here on a group exists: undo it if anything below fails.
        var live = LiveGroup(group: WiFiGroup(id: WiFiGroupID(), role: .groupOwner, interface: "", radio: radio,
                                              credentials: WiFiCredentials(kind: .p2pGroup, ssid: "", passphrase: "", frequency: 0,
                                                                           bssid: .zero),
                                              linkLocalAddress: "", joinMethod: nil, timings: []),
                             radioPath: radioPath, groupInterfacePath: sig.interfaceObject, groupObject: sig.groupObject,
                             networkPath: nil, reenable: [])
        register(live)
        do {
            let info = try WPAProperties.group(bus.groupProperties(sig.groupObject))
            guard !info.passphrase.isEmpty else { throw WiFiError.malformedReply("the group owner's group has no passphrase") }
            guard let frequency = info.frequency else { throw WiFiError.malformedReply("the group owner's group has no Frequency") }
            let ifname = try bus.interfaceInfo(sig.interfaceObject).ifname
            live.group.interface = ifname
            // The owner's BSSID is its group interface's address, when wpa_supplicant does not know it yet.
            let bssid = info.bssid.isZero ? WiFiRadios.read("\(sysClassNet)/\(ifname)/address").flatMap { MACAddress($0) } ?? info.bssid : info.bssid
            live.group.credentials = WiFiCredentials(kind: .p2pGroup, ssid: info.ssid, passphrase: info.passphrase, frequency: frequency,
                                                     bssid: bssid, ownerDeviceAddress: WiFiRadios.p2pDeviceAddress(for: radio, devices: devices))
            register(live)
            let address = try timings.measure(.linkLocal) {
                try waitLinkLocal(ifname, hosting: true, waitForDAD: waitForDAD, budget: budget)
            }
            live.group.linkLocalAddress = address.address
            live.group.linkLocalState = address.state
            live.group.timings = timings.steps
            register(live)
            return live.group
        } catch {
            leaveBlocking(live.group.id)
            throw error
        }
    }

    /// The started group of a P2P set-up's verdict, or the error that ends the set-up.
    static func groupStarted(_ verdict: WiFiSetupWatch.Verdict?, step: WiFiStep, budget: StepBudget) throws -> WPAGroupSignal {
        switch verdict {
        case let .groupStarted(g)?: return g
        case nil: throw WiFiError.timedOut(step: step.rawValue, after: budget.limit)
        case .failed(.supplicantStopped)?: throw WiFiError.supplicantNotRunning
        case let .failed(why)?: throw WiFiError.setupFailed(step: step.rawValue, why)
        case .completed?: throw WiFiError.malformedReply("the radio's network completed instead of a P2P group starting")
        }
    }

    /// Throws `unsupported` unless wpa_supplicant offers P2P on this radio and no
    /// NetworkManager manages it (it would take the group down: `groupsRemoved`).
    func requireP2P(_ bus: WPASupplicantBus, radio: String, radioPath: String, devices: [WirelessDevice]?) throws {
        try bus.requireNotNetworkManagers(radio)
        let info = try bus.interfaceInfo(radioPath)
        if let modes = info.modes, !modes.contains("p2p") {
            throw WiFiError.unsupported(interface: radio, why: "wpa_supplicant offers no P2P on it (modes: \(modes.joined(separator: ", "))); P2P is disabled (p2p_disabled=1) or the driver lacks it")
        }
        let managed = try? supplicantInterfaceNames(bus)
        if case let .otherRadios(others) = WiFiRadios.p2pDevice(for: radio, devices: devices, supplicantInterfaces: managed) {
            throw WiFiError.unsupported(interface: radio, why: "wpa_supplicant's one P2P device is on \(others.joined(separator: ", "))")
        }
    }

    func startSoftAPBlocking(_ radio: String, frequency: Int, budget: StepBudget) throws -> WiFiGroup {
        try WiFiRadios.require(radio, sysClassNet: sysClassNet)
        let bus = try connection()
        try requireSupplicant(bus)
        var timings = StepTimings()
        return try usingRadio(bus, radio, timings: &timings) { radioPath, timings in
            try startSoftAP(bus, radio: radio, radioPath: radioPath, frequency: frequency, timings: &timings, budget: budget)
        }
    }

    func startSoftAP(_ bus: WPASupplicantBus, radio: String, radioPath: String, frequency: Int, timings: inout StepTimings,
                     budget: StepBudget) throws -> WiFiGroup {
        let info = try bus.interfaceInfo(radioPath)
        if let modes = info.modes, !modes.contains("ap") {
            throw WiFiError.unsupported(interface: radio, why: "wpa_supplicant cannot run an access point on it (modes: \(modes.joined(separator: ", ")))")
        }
        if case let .managed(state) = NetworkManagerProbe.status(of: radio, bus: bus) {
            throw WiFiError.unsupported(interface: radio, why: "NetworkManager manages it (state \(state)); a soft-AP would take it from NetworkManager")
        }
        guard let bssid = WiFiRadios.read("\(sysClassNet)/\(radio)/address").flatMap({ MACAddress($0) }) else {
            throw WiFiError.noSuchRadio(radio)
        }
        let creds = WiFiCredentials(kind: .softAP, ssid: "PeerLink-" + Self.randomText(6), passphrase: Self.randomText(16),
                                    frequency: frequency, bssid: bssid)
        let network: [String: DBusValue] = [
            "ssid": .string(creds.ssid), "psk": .string(creds.passphrase), "mode": .int32(2), "frequency": .int32(Int32(frequency)),
            "key_mgmt": .string("WPA-PSK"), "proto": .string("RSN"), "pairwise": .string("CCMP"), "group": .string("CCMP"),
        ]
        var live = try connectNetwork(bus, radio: radio, radioPath: radioPath, role: .accessPoint, network: network,
                                      credentials: creds, timings: &timings, budget: budget)
        do {
            let address = try timings.measure(.linkLocal) { try waitLinkLocal(radio, hosting: true, budget: budget) }
            live.group.linkLocalAddress = address.address
            live.group.linkLocalState = address.state
            live.group.timings = timings.steps
            register(live)
            return live.group
        } catch {
            leaveBlocking(live.group.id)
            throw error
        }
    }

    /// Adds `network` to the radio, selects it and waits for `completed`: a soft-AP up or a
    /// station associated with keys installed. Registers the group; on failure removes the
    /// network again.
    func connectNetwork(_ bus: WPASupplicantBus, radio: String, radioPath: String, role: WiFiRole, network: [String: DBusValue],
                        credentials: WiFiCredentials, timings: inout StepTimings, budget: StepBudget) throws -> LiveGroup {
        let reenable = try enabledNetworks(bus, radioPath)
        let completed = bus.signals.watch(WiFiSetupWatch(goal: .network, radioPath: radioPath))
        var networkPath: String?
        do {
            let verdict: WiFiSetupWatch.Verdict? = try timings.measure(.connect) {
                let r = try bus.call(radioPath, WPASupplicantBus.interfaceAPI, "AddNetwork", [.propertyDictionary(network)])
                guard let p = WPAProperties.text(r.first) else { throw WiFiError.malformedReply("AddNetwork returned no path") }
                networkPath = p
                _ = try bus.call(radioPath, WPASupplicantBus.interfaceAPI, "SelectNetwork", [.objectPath(p)])
                return completed.wait(seconds: budget.remaining).verdict
            }
            switch verdict {
            case .completed?: break
            case nil:
                let state = (try? bus.interfaceInfo(radioPath).state.rawValue) ?? "unknown"
                throw WiFiError.timedOut(step: "\(WiFiStep.connect.rawValue) (state \(state))", after: budget.limit)
            case .failed(.supplicantStopped)?: throw WiFiError.supplicantNotRunning
            case let .failed(why)?: throw WiFiError.setupFailed(step: WiFiStep.connect.rawValue, why)
            case .groupStarted?: throw WiFiError.malformedReply("a P2P group started instead of the network")
            }
        } catch {
            completed.cancel()
            if let p = networkPath { _ = try? bus.call(radioPath, WPASupplicantBus.interfaceAPI, "RemoveNetwork", [.objectPath(p)]) }
            restore(bus, reenable)
            throw error
        }
        let live = LiveGroup(group: WiFiGroup(id: WiFiGroupID(), role: role, interface: radio, radio: radio, credentials: credentials,
                                              linkLocalAddress: "", joinMethod: role == .station ? .station : nil, timings: []),
                             radioPath: radioPath, groupInterfacePath: nil, groupObject: nil, networkPath: networkPath, reenable: reenable)
        register(live)
        return live
    }

    /// The networks of an interface that are enabled now (SelectNetwork disables the others).
    func enabledNetworks(_ bus: WPASupplicantBus, _ radioPath: String) throws -> [String] {
        let paths = WPAProperties.objectPaths(try bus.get(radioPath, WPASupplicantBus.interfaceAPI, "Networks")) ?? []
        return paths.filter { p in (try? bus.get(p, "fi.w1.wpa_supplicant1.Network", "Enabled"))?.bool == true }
    }

    /// Enables `networks` again (best effort).
    func restore(_ bus: WPASupplicantBus, _ networks: [String]) {
        for p in networks { try? bus.set(p, "fi.w1.wpa_supplicant1.Network", "Enabled", .bool(true)) }
    }

    /// Random letters and digits for SSIDs and passphrases.
    static func randomText(_ count: Int) -> String {
        let alphabet = Array("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        var g = SystemRandomNumberGenerator()
        return String((0..<count).map { _ in alphabet[Int(g.next(upperBound: UInt64(alphabet.count)))] })
    }
}
