import Foundation
import PeerLink
import Synchronization

/// Wi-Fi Direct groups and soft-APs through the system's own wpa_supplicant, over its D-Bus
/// API (`fi.w1.wpa_supplicant1`, the one NetworkManager uses). It adds a radio to
/// wpa_supplicant when wpa_supplicant does not manage it yet (`CreateInterface`), forms or
/// joins a group, waits until the group interface has a usable IPv6 link-local address, and
/// tears down what it set up.
///
/// Every blocking D-Bus or netlink exchange runs on a thread of its own (`BlockingCall`);
/// the methods are `async` and never block a Swift concurrency thread or a shared queue.
public final class WiFiDirect: Sendable {
    /// The D-Bus address wpa_supplicant is on; nil means the system bus.
    public let busAddress: String?
    let sysClassNet: String

    /// What the groups, radios and streams of this client are now.
    struct State {
        var bus: WPASupplicantBus?
        /// Groups set up and not yet left.
        var live: [WiFiGroupID: LiveGroup] = [:]
        /// Radios PeerLink added to wpa_supplicant: interface name → object path.
        var created: [String: String] = [:]
        /// Radios kept under wpa_supplicant (`holdRadio`), with how many holds each has.
        var holds: [String: Int] = [:]
        /// The bus connection whose wpa_supplicant restarts re-add held radios.
        weak var restartWatch: WPASupplicantBus?
        /// Radios PeerLink had added to a wpa_supplicant that left the bus, until it is back.
        var addedBeforeRestart: Set<String> = []
        /// Event streams per group, so that `leave` can end them with `.left`.
        var sinks: [WiFiGroupID: [Int: AsyncStream<WiFiGroupEvent>.Continuation]] = [:]
        var nextSink = 0
    }
    /// Held only for reads and updates of the state, never across a D-Bus call or a wait.
    let state = Mutex(State())

    /// What `leave` needs to undo a group.
    struct LiveGroup: Sendable {
        var group: WiFiGroup
        var radioPath: String
        var groupInterfacePath: String?
        var groupObject: String?
        var networkPath: String?
        /// Networks that were enabled before `SelectNetwork` disabled them.
        var reenable: [String]
        var watch: WiFiGroupEvents.Watch {
            .init(role: group.role, radioPath: radioPath, groupInterfacePath: groupInterfacePath, groupObject: groupObject)
        }
    }

    /// `busAddress`: the D-Bus address of wpa_supplicant's bus (nil: the system bus, or
    /// `DBUS_SYSTEM_BUS_ADDRESS`).
    public convenience init(busAddress: String? = nil) {
        self.init(busAddress: busAddress, sysClassNet: WiFiRadios.defaultSysClassNet)
    }

    init(busAddress: String?, sysClassNet: String) {
        self.busAddress = busAddress
        self.sysClassNet = sysClassNet
    }

    /// Runs `body` on a thread of its own: forming or joining a group waits for
    /// wpa_supplicant for up to its timeout.
    func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await BlockingCall.run("pl.wifi", body)
    }

    /// The bus connection, made (again) when there is none or it was lost.
    func connection() throws -> WPASupplicantBus {
        if let b = state.withLock({ $0.bus }), !b.isDisconnected { return b }
        let b = try WPASupplicantBus(address: busAddress)
        state.withLock { $0.bus = b }
        return b
    }

    /// Throws `supplicantNotRunning` unless wpa_supplicant is on the bus.
    func requireSupplicant(_ bus: WPASupplicantBus) throws {
        guard try bus.hasOwner() else { throw WiFiError.supplicantNotRunning }
    }

    /// Runs `body` with the path of the radio's wpa_supplicant interface (added when
    /// missing). When `body` throws, an interface PeerLink added is removed again unless a
    /// live group still uses it: a failed attempt leaves wpa_supplicant as it found it.
    func usingRadio<T>(_ bus: WPASupplicantBus, _ radio: String, timings: inout StepTimings,
                       _ body: (String, inout StepTimings) throws -> T) throws -> T {
        let path = try ensureInterface(bus, radio, timings: &timings)
        do {
            return try body(path, &timings)
        } catch {
            releaseRadios(bus)
            throw error
        }
    }

    /// Removes the wpa_supplicant interfaces PeerLink added that no live group uses and no
    /// one holds (best effort; an interface is forgotten once wpa_supplicant no longer has it). Not while
    /// wpa_supplicant runs any P2P group: removing any radio's interface makes it end every
    /// P2P group it runs (`wpa_supplicant_deinit_iface` calls `wpas_p2p_group_remove(wpa_s,
    /// "*")`), ours and NetworkManager's alike. Such interfaces go at a later leave.
    func releaseRadios(_ bus: WPASupplicantBus) {
        let unused: [String: String] = state.withLock { s in
            s.created.filter { name, _ in s.holds[name] == nil && !s.live.values.contains { $0.group.radio == name } }
        }
        guard !unused.isEmpty, !p2pGroupsRunning(bus) else { return }
        for (radio, path) in unused.sorted(by: { $0.key < $1.key }) {
            if (try? bus.removeInterface(path)) != nil || (try? bus.interfacePath(radio)) == nil {
                state.withLock { _ = $0.created.removeValue(forKey: radio) }
            }
        }
    }

    /// The names of the interfaces wpa_supplicant manages.
    func supplicantInterfaceNames(_ bus: WPASupplicantBus) throws -> [String] {
        try bus.interfacePaths().compactMap { try? bus.interfaceInfo($0).ifname }
    }

    /// Whether wpa_supplicant runs a P2P group now: one of its interfaces is a P2P-GO or
    /// P2P-client (by nl80211 type; by wpa_supplicant's `p2p-IF-N` naming when nl80211 is
    /// unreadable). When in doubt (the bus fails), yes.
    func p2pGroupsRunning(_ bus: WPASupplicantBus) -> Bool {
        guard let names = try? supplicantInterfaceNames(bus) else { return true }
        let devices = (try? Nl80211.devices()) ?? nil
        return names.contains { name in
            if let d = devices?.first(where: { $0.interfaceName == name }) { return d.type == .p2pClient || d.type == .p2pGroupOwner }
            return name.hasPrefix("p2p-") && !name.hasPrefix("p2p-dev-")
        }
    }

    /// The radio's wpa_supplicant interface, added when missing. Returns its path.
    func ensureInterface(_ bus: WPASupplicantBus, _ radio: String, timings: inout StepTimings) throws -> String {
        if let p = try bus.interfacePath(radio) { return p }
        try bus.requireNoOtherDriver(radio)
        try bus.requireNotNetworkManagers(radio)
        return try timings.measure(.addInterface) {
            do {
                let p = try bus.createInterface(radio)
                state.withLock { $0.created[radio] = p }
                return p
            } catch let e where WPASupplicantBus.errorName(e) == "fi.w1.wpa_supplicant1.InterfaceExists" {
                guard let p = try bus.interfacePath(radio) else { throw e }
                return p
            }
        }
    }

    // MARK: - Radios and what they can do

    /// The Wi-Fi radios of this machine (group interfaces left out).
    public func radios() async -> [WiFiRadio] {
        let net = sysClassNet
        return (try? await offThePool { WiFiRadios.list(sysClassNet: net, devices: (try? Nl80211.devices()) ?? nil) }) ?? []
    }

    /// What `interface` can do (Wi-Fi Direct, soft-AP), with reasons. Throws only for a name
    /// that is not a Wi-Fi radio (`noSuchRadio`, or `noRadio` when there is none).
    public func probe(interface: String) async throws -> WiFiRadioReport {
        try await offThePool { try self.probeBlocking(interface) }
    }

    func probeBlocking(_ radio: String) throws -> WiFiRadioReport {
        try WiFiRadios.require(radio, sysClassNet: sysClassNet)
        let devices = (try? Nl80211.devices()) ?? nil
        let phys = (try? Nl80211.phys()) ?? nil
        let phyName = WiFiRadios.read("\(sysClassNet)/\(radio)/phy80211/name")
        let phy = phys?.first { $0.name == phyName }
        let types = phy?.interfaceTypes
        var supplicant: RadioFacts.Supplicant
        var nm = NetworkManagerStatus.unknown("not asked: no D-Bus")
        var managedNames: [String]?
        var other: OtherSupplicant?
        do {
            let bus = try connection()
            nm = NetworkManagerProbe.status(of: radio, bus: bus)
            if try !bus.hasOwner() {
                supplicant = .notRunning
            } else {
                managedNames = try? supplicantInterfaceNames(bus)
                if let path = try bus.interfacePath(radio) {
                    supplicant = .managing(modes: try bus.interfaceInfo(path).modes)
                } else {
                    supplicant = .notManaging
                    other = OtherSupplicantScan.find(radio, excludingPID: bus.ownerPID())
                }
            }
        } catch WiFiError.busUnavailable(let why) {
            supplicant = .busUnavailable(why)
        } catch WiFiError.supplicantNotRunning {
            supplicant = .notRunning
        } catch let WiFiError.notPermitted(why) {
            supplicant = .notAllowed(why)
        }
        let facts = RadioFacts(interface: radio, phy: phyName, kernelTypes: types, supplicant: supplicant,
                               p2pDevice: WiFiRadios.p2pDevice(for: radio, devices: devices, supplicantInterfaces: managedNames),
                               networkManager: nm, combinations: phy?.combinations, otherDriver: other)
        return RadioCapabilities.evaluate(facts)
    }

    // MARK: - Helpers shared by forming and joining

    /// Waits until `interface` has a usable link-local address, or throws. A host (it is
    /// dialled) takes an optimistic address at once, and with `waitForDAD` false any address
    /// whose DAD has not failed; a joiner (it dials) waits for DAD to end, since its first
    /// packet could not leave before (`IPv6InterfaceAddress.isUsableLinkLocal`).
    func waitLinkLocal(_ interface: String, hosting: Bool, waitForDAD: Bool = true, budget: StepBudget) throws -> IPv6InterfaceAddress {
        while true {
            let text = (try? String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8)) ?? ""
            let found = hosting && !waitForDAD ? IPv6LinkLocal.knownAddress(on: interface, in: text)
                                               : IPv6LinkLocal.usableAddress(on: interface, in: text, optimistic: hosting)
            if let a = found { return a }
            if ContinuousClock.now >= budget.deadline {
                throw WiFiError.timedOut(step: "\(WiFiStep.linkLocal.rawValue) on \(interface) (\(IPv6LinkLocal.status(of: interface, in: text)))",
                                         after: budget.limit)
            }
            usleep(20_000)
        }
    }

    /// Registers a group for `leave` and `events`.
    func register(_ g: LiveGroup) { state.withLock { $0.live[g.group.id] = g } }

    /// Whether another live group still uses `radio`.
    func radioInUse(_ radio: String) -> Bool { state.withLock { $0.live.values.contains { $0.group.radio == radio } } }
}

/// Step timings as they are measured.
struct StepTimings {
    var steps: [WiFiStepTiming] = []

    mutating func measure<T>(_ step: WiFiStep, _ body: () throws -> T) rethrows -> T {
        let start = ContinuousClock.now
        let v = try body()
        steps.append(WiFiStepTiming(step: step, duration: ContinuousClock.now - start))
        return v
    }
}

/// A time budget shared by the steps of one operation.
struct StepBudget {
    let deadline: ContinuousClock.Instant
    let limit: Duration
    init(_ limit: Duration) { self.limit = limit; deadline = .now + limit }
    /// Seconds left (at least a small positive value, so a wait still looks once).
    var remaining: Double { max(0.05, (deadline - .now).inSeconds) }
    var limitSeconds: Double { limit.inSeconds }
}

