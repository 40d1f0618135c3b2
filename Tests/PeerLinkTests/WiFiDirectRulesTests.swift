import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkDBus
@testable import PeerLinkWiFiDirect

/// The Wi-Fi edge's decisions on the host: capability verdicts and their reasons, the join
/// method, which signals end a group, doctor's report, and the errors without a radio, a bus
/// or wpa_supplicant.
final class WiFiDirectRulesTests: XCTestCase {
    let all: Set<WiFiInterfaceType> = [.station, .accessPoint, .p2pClient, .p2pGroupOwner, .p2pDevice, .monitor]
    let modesAll = ["infrastructure", "ad-hoc", "ap", "p2p", "mesh"]

    func facts(types: Set<WiFiInterfaceType>? = nil, supplicant: RadioFacts.Supplicant? = nil, p2p: RadioFacts.P2PDevice = .thisRadio,
               nm: NetworkManagerStatus = .notRunning) -> RadioFacts {
        RadioFacts(interface: "wlan0", phy: "phy0", kernelTypes: types ?? all, supplicant: supplicant ?? .managing(modes: modesAll),
                   p2pDevice: p2p, networkManager: nm)
    }

    func testEverythingAvailable() {
        let r = RadioCapabilities.evaluate(facts())
        XCTAssertTrue(r.p2p.available, r.p2p.detail)
        XCTAssertTrue(r.softAP.available, r.softAP.detail)
        XCTAssertTrue(r.managedBySupplicant)
        XCTAssertEqual(r.kernelInterfaceTypes, ["managed", "AP", "monitor", "P2P-client", "P2P-GO", "P2P-device"])
        let notYet = RadioCapabilities.evaluate(facts(supplicant: .notManaging))
        XCTAssertTrue(notYet.p2p.available)
        XCTAssertTrue(notYet.p2p.detail.contains("once PeerLink adds wlan0"), notYet.p2p.detail)
        XCTAssertFalse(notYet.managedBySupplicant)
    }

    func testRadioThatCanDoNeither() {
        let r = RadioCapabilities.evaluate(facts(types: [.station, .monitor], supplicant: .managing(modes: ["infrastructure"])))
        XCTAssertFalse(r.p2p.available)
        XCTAssertTrue(r.p2p.detail.contains("does not offer P2P-GO and P2P-client"), r.p2p.detail)
        XCTAssertTrue(r.p2p.detail.contains("managed, monitor"), r.p2p.detail)
        XCTAssertTrue(r.p2p.fix?.contains("iw list") ?? false)
        XCTAssertFalse(r.softAP.available)
        XCTAssertTrue(r.softAP.detail.contains("does not offer AP mode"), r.softAP.detail)
    }

    func testDriverWhoseCombinationsKeepP2PFromTheStation() {
        var f = facts()
        f.combinations = [WiFiInterfaceCombination(limits: [.init(max: 1, types: [.station, .accessPoint, .p2pClient, .p2pGroupOwner])], total: 1, channels: 1)]
        let r = RadioCapabilities.evaluate(f)
        XCTAssertFalse(r.p2p.available)
        XCTAssertTrue(r.p2p.detail.contains("interface combinations"), r.p2p.detail)
        XCTAssertTrue(r.p2p.detail.contains("total <= 1"), r.p2p.detail)
        XCTAssertEqual(r.interfaceCombinations, ["#{ managed, AP, P2P-client, P2P-GO } <= 1, total <= 1, #channels <= 1"])
        f.combinations = [WiFiInterfaceCombination(limits: [.init(max: 2, types: [.station, .p2pClient, .p2pGroupOwner])], total: 2, channels: 1)]
        XCTAssertTrue(RadioCapabilities.evaluate(f).p2p.available)
        XCTAssertTrue(RadioCapabilities.evaluate(f).p2p.detail.hasPrefix("ready"), RadioCapabilities.evaluate(f).p2p.detail)
        f.combinations = nil
        XCTAssertTrue(RadioCapabilities.evaluate(f).p2p.detail.contains("no interface combinations"))
    }

    func testDriverWithAPButNoP2P() {
        let r = RadioCapabilities.evaluate(facts(types: [.station, .accessPoint], supplicant: .managing(modes: ["infrastructure", "ap"]), p2p: .none))
        XCTAssertFalse(r.p2p.available)
        XCTAssertTrue(r.softAP.available, r.softAP.detail)
    }

    func testP2PDisabledInWpaSupplicant() {
        let r = RadioCapabilities.evaluate(facts(supplicant: .managing(modes: ["infrastructure", "ap"])))
        XCTAssertFalse(r.p2p.available)
        XCTAssertTrue(r.p2p.detail.contains("p2p_disabled=1"), r.p2p.detail)
        XCTAssertTrue(r.p2p.fix?.contains("soft-AP") ?? false)
        XCTAssertTrue(r.softAP.available)
    }

    func testP2PDeviceOnAnotherRadio() {
        let r = RadioCapabilities.evaluate(facts(p2p: .otherRadios(["wlan1"])))
        XCTAssertFalse(r.p2p.available)
        XCTAssertTrue(r.p2p.detail.contains("one P2P device per process"), r.p2p.detail)
        XCTAssertEqual(r.p2p.fix, "use --wifi wlan1 for Wi-Fi Direct")
        let notYetAdded = RadioCapabilities.evaluate(facts(supplicant: .notManaging, p2p: .otherRadios(["wlan1"])))
        XCTAssertFalse(notYetAdded.p2p.available, "adding the radio would not give it P2P: \(notYetAdded.p2p.detail)")
    }

    func testSupplicantMissingOrNoBus() {
        let r = RadioCapabilities.evaluate(facts(supplicant: .notRunning))
        XCTAssertFalse(r.p2p.available)
        XCTAssertFalse(r.softAP.available)
        XCTAssertFalse(r.supplicantRunning)
        XCTAssertTrue(r.p2p.fix?.contains("systemctl start wpa_supplicant") ?? false)
        let b = RadioCapabilities.evaluate(facts(supplicant: .busUnavailable("no socket")))
        XCTAssertFalse(b.p2p.available)
        XCTAssertTrue(b.p2p.detail.contains("D-Bus"), b.p2p.detail)
        let denied = RadioCapabilities.evaluate(facts(supplicant: .notAllowed("Rejected send message")))
        XCTAssertFalse(denied.p2p.available)
        XCTAssertFalse(denied.softAP.available)
        XCTAssertTrue(denied.supplicantRunning)
        XCTAssertFalse(denied.supplicantAllowed)
        XCTAssertTrue(denied.p2p.fix?.contains("netdev") ?? false, "\(denied.p2p)")
        let doctor = DoctorWiFi.report(radios: [radio], reports: [denied], missing: nil, asked: nil)
        XCTAssertEqual(doctor.checks.first { $0.name == "wpa_supplicant" }?.ok, false)
        XCTAssertEqual(WiFiError(DBusFailure.call(name: "org.freedesktop.DBus.Error.AccessDenied", message: "Rejected"), method: "GetInterface"),
                       .notPermitted("Rejected"))
        XCTAssertTrue(WiFiError.notPermitted("Rejected").description.contains("usermod -aG netdev"))
        // The driver verdict wins over the daemon's: a radio without P2P stays without it.
        let d = RadioCapabilities.evaluate(facts(types: [.station], supplicant: .notRunning))
        XCTAssertTrue(d.p2p.detail.contains("driver"), d.p2p.detail)
    }

    /// NetworkManager takes down every group it did not start on a radio it manages (lab:
    /// `NetworkManagerLabTests`), so such a radio offers neither Wi-Fi Direct nor a soft-AP,
    /// and the fix says how to hand it over. A radio it leaves unmanaged is PeerLink's.
    func testNetworkManagersRadioIsLeftToIt() {
        let r = RadioCapabilities.evaluate(facts(nm: .managed(state: "disconnected")))
        XCTAssertFalse(r.p2p.available)
        XCTAssertTrue(r.p2p.detail.contains("NetworkManager manages wlan0") && r.p2p.detail.contains("takes down every Wi-Fi Direct group"), r.p2p.detail)
        XCTAssertTrue(r.p2p.fix?.contains("nmcli device set wlan0 managed no") ?? false, r.p2p.fix ?? "")
        XCTAssertTrue(r.p2p.fix?.contains("unmanaged-devices=interface-name:wlan0") ?? false, r.p2p.fix ?? "")
        XCTAssertFalse(r.softAP.available)
        XCTAssertTrue(r.softAP.fix?.contains("nmcli") ?? false)
        XCTAssertTrue(RadioCapabilities.evaluate(facts(nm: .unmanaged)).p2p.available)
        XCTAssertTrue(RadioCapabilities.evaluate(facts(nm: .unknown("no answer"))).p2p.available, "only a radio it is known to manage is refused")
        XCTAssertEqual(NetworkManagerProbe.interpret(managed: true, state: 100), .managed(state: "activated"))
        XCTAssertEqual(NetworkManagerProbe.interpret(managed: false, state: 10), .unmanaged)
        XCTAssertEqual(NetworkManagerProbe.interpret(managed: nil, state: nil), .unknown("the device has no Managed property"))
        XCTAssertEqual(NetworkManagerProbe.stateName(77), "state 77")
    }

    func testJoinMethodChoice() throws {
        let noP2P = WiFiError.unsupported(interface: "wlan1", why: "no P2P")
        let nm = NetworkManagerStatus.managed(state: "activated")
        func choose(_ m: WiFiJoinMethod, _ k: WiFiCredentials.Kind, _ p: Error?, _ n: NetworkManagerStatus) throws -> WiFiJoinMethod {
            try WiFiDirect.chooseJoinMethod(m, kind: k, p2pProblem: p, networkManager: n, radio: "wlan1")
        }
        XCTAssertEqual(try choose(.automatic, .p2pGroup, nil, .notRunning), .p2pClient)
        XCTAssertEqual(try choose(.automatic, .p2pGroup, noP2P, .notRunning), .station)
        XCTAssertEqual(try choose(.automatic, .softAP, nil, .notRunning), .station)
        XCTAssertEqual(try choose(.automatic, .softAP, nil, nm), .p2pClient, "NetworkManager keeps the station; a P2P client can still join")
        XCTAssertThrowsError(try choose(.automatic, .softAP, noP2P, nm))
        XCTAssertThrowsError(try choose(.station, .p2pGroup, nil, nm)) { XCTAssertTrue("\($0)".contains("NetworkManager"), "\($0)") }
        XCTAssertThrowsError(try choose(.p2pClient, .p2pGroup, noP2P, .notRunning)) { XCTAssertEqual($0 as? WiFiError, noP2P) }
        XCTAssertEqual(try choose(.station, .p2pGroup, noP2P, .unmanaged), .station)
    }

    func signal(_ path: String, _ iface: String, _ member: String, _ args: [DBusValue]) -> WPASignal {
        WPASignal(path: path, interface: iface, member: member, args: args)
    }

    /// The bus's word on wpa_supplicant coming and going (held radios are added again when
    /// it is back).
    func testSupplicantPresenceFromNameOwnerChanged() {
        func owner(_ name: String, old: String, new: String) -> WPASignal {
            signal("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged", [.string(name), .string(old), .string(new)])
        }
        XCTAssertEqual(owner(WPASupplicantBus.service, old: ":1.4", new: "").supplicantPresence, false)
        XCTAssertTrue(owner(WPASupplicantBus.service, old: ":1.4", new: "").isSupplicantGone)
        XCTAssertEqual(owner(WPASupplicantBus.service, old: "", new: ":1.9").supplicantPresence, true)
        XCTAssertFalse(owner(WPASupplicantBus.service, old: "", new: ":1.9").isSupplicantGone)
        XCTAssertNil(owner("org.freedesktop.NetworkManager", old: "", new: ":1.2").supplicantPresence, "another name")
        XCTAssertNil(signal("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged", [.string(WPASupplicantBus.service)]).supplicantPresence)
        XCTAssertNil(signal(WPASupplicantBus.rootPath, WPASupplicantBus.service, "InterfaceAdded", []).supplicantPresence)
    }

    func testWhichSignalsEndAGroup() {
        let radio = "/fi/w1/wpa_supplicant1/Interfaces/0", gi = "/fi/w1/wpa_supplicant1/Interfaces/1"
        let go = WiFiGroupEvents.Watch(role: .groupOwner, radioPath: radio, groupInterfacePath: gi, groupObject: gi + "/Groups/SD")
        func finished(_ iface: String) -> WPASignal {
            signal(radio, WPASupplicantBus.p2pAPI, "GroupFinished", [.array([
                .dictEntry(.string("interface_object"), .variant(.objectPath(iface))), .dictEntry(.string("role"), .variant(.string("GO"))),
                .dictEntry(.string("group_object"), .variant(.objectPath(iface + "/Groups/SD"))),
            ])])
        }
        XCTAssertEqual(WiFiGroupEvents.classify(finished(gi), go), .ended(.groupFinished))
        XCTAssertNil(WiFiGroupEvents.classify(finished("/fi/w1/wpa_supplicant1/Interfaces/7"), go), "another group")
        XCTAssertNil(WiFiGroupEvents.classify(signal(radio, WPASupplicantBus.p2pAPI, "GroupFinished", [.string("junk")]), go))
        XCTAssertEqual(WiFiGroupEvents.classify(signal(WPASupplicantBus.rootPath, WPASupplicantBus.service, "InterfaceRemoved", [.objectPath(gi)]), go),
                       .ended(.interfaceRemoved))
        XCTAssertEqual(WiFiGroupEvents.classify(signal(gi + "/Groups/SD", WPASupplicantBus.groupAPI, "PeerJoined",
                                                       [.objectPath(radio + "/Peers/420000000100")]), go), .peerJoined("420000000100"))
        let gone = signal("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged", [.string(WPASupplicantBus.service), .string(":1.4"), .string("")])
        XCTAssertEqual(WiFiGroupEvents.classify(gone, go), .ended(.supplicantStopped))
        let started = signal("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged", [.string(WPASupplicantBus.service), .string(""), .string(":1.5")])
        XCTAssertNil(WiFiGroupEvents.classify(started, go))

        let ap = WiFiGroupEvents.Watch(role: .accessPoint, radioPath: radio, groupInterfacePath: nil, groupObject: nil)
        func state(_ s: String) -> WPASignal {
            signal(radio, WPASupplicantBus.interfaceAPI, "PropertiesChanged", [.array([.dictEntry(.string("State"), .variant(.string(s)))])])
        }
        XCTAssertEqual(WiFiGroupEvents.classify(state("disconnected"), ap), .ended(.disconnected("disconnected")))
        XCTAssertNil(WiFiGroupEvents.classify(state("completed"), ap))
        XCTAssertEqual(WiFiGroupEvents.classify(signal(radio, WPASupplicantBus.interfaceAPI, "StaAuthorized", [.string("02:00:00:00:01:00")]), ap),
                       .peerJoined("02:00:00:00:01:00"))
        XCTAssertNil(WiFiGroupEvents.classify(finished(gi), ap), "an AP does not end with a P2P group")
    }

    // MARK: doctor

    func report(_ f: RadioFacts) -> WiFiRadioReport { RadioCapabilities.evaluate(f) }
    let radio = WiFiRadio(interface: "wlan0", phy: "phy0", address: nil)

    func testDoctorNoRadio() {
        let r = DoctorWiFi.report(radios: [], reports: [], missing: nil, asked: nil)
        XCTAssertFalse(r.usable)
        XCTAssertEqual(r.medium, "wifi-direct")
        XCTAssertEqual(r.checks.first?.name, "Wi-Fi radio")
        XCTAssertTrue(r.checks.first?.detail.contains("no Wi-Fi radio") ?? false)
        XCTAssertNotNil(r.checks.first?.fix)
    }

    func testDoctorSupplicantNotRunning() {
        let r = DoctorWiFi.report(radios: [radio], reports: [report(facts(supplicant: .notRunning))], missing: nil, asked: nil)
        XCTAssertFalse(r.usable)
        let check = r.checks.first { $0.name == "wpa_supplicant" }
        XCTAssertEqual(check?.ok, false)
        XCTAssertTrue(check?.fix?.contains("systemctl start wpa_supplicant") ?? false, "\(String(describing: check))")
    }

    func testDoctorRadioThatCanDoNeither() {
        let r = DoctorWiFi.report(radios: [radio], reports: [report(facts(types: [.station], supplicant: .managing(modes: ["infrastructure"])))],
                                  missing: nil, asked: nil)
        XCTAssertFalse(r.usable)
        XCTAssertEqual(r.checks.first { $0.name == "wlan0 Wi-Fi Direct" }?.ok, false)
        XCTAssertEqual(r.checks.first { $0.name == "wlan0 soft-AP fallback" }?.ok, false)
    }

    func testDoctorUsableWithSoftAPOnlyAndQuietAboutAnUnneededFallback() {
        let apOnly = DoctorWiFi.report(radios: [radio], reports: [report(facts(supplicant: .managing(modes: ["infrastructure", "ap"])))],
                                       missing: nil, asked: nil)
        XCTAssertTrue(apOnly.usable)
        XCTAssertEqual(apOnly.checks.first { $0.name == "wlan0 soft-AP fallback" }?.ok, true)
        let both = DoctorWiFi.report(radios: [radio], reports: [report(facts(supplicant: .managing(modes: ["infrastructure", "p2p"]), nm: .unmanaged))],
                                     missing: nil, asked: nil)
        XCTAssertTrue(both.usable)
        let fallback = both.checks.first { $0.name == "wlan0 soft-AP fallback" }
        XCTAssertEqual(fallback?.ok, true)
        XCTAssertTrue(fallback?.detail.contains("not needed") ?? false)
        XCTAssertTrue(both.checks.contains { $0.name == "wlan0 NetworkManager" && $0.detail.contains("unmanaged") })
        // A radio NetworkManager manages: not usable, and doctor says how to hand it over.
        let nm = DoctorWiFi.report(radios: [radio], reports: [report(facts(nm: .managed(state: "disconnected")))], missing: nil, asked: nil)
        XCTAssertFalse(nm.usable)
        let p2p = nm.checks.first { $0.name == "wlan0 Wi-Fi Direct" }
        XCTAssertEqual(p2p?.ok, false)
        XCTAssertTrue(p2p?.fix?.contains("managed no") ?? false, p2p?.fix ?? "")
        XCTAssertTrue(nm.checks.contains { $0.name == "wlan0 NetworkManager" && $0.detail.contains("takes down Wi-Fi Direct groups") })
    }

    func testDoctorUnknownInterface() {
        let r = DoctorWiFi.report(radios: [radio], reports: [], missing: WiFiError.noSuchRadio("wlan7").description, asked: "wlan7")
        XCTAssertFalse(r.usable)
        XCTAssertTrue(r.checks[0].detail.contains("wlan7"))
        XCTAssertTrue(r.checks[0].fix?.contains("wlan0") ?? false)
    }

    // MARK: errors without a radio, a bus or wpa_supplicant (real calls)

    func fakeSysfs(radios: [String]) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-sysfs-\(UUID().uuidString.prefix(8))")
        for r in radios {
            try FileManager.default.createDirectory(at: dir.appendingPathComponent("\(r)/phy80211"), withIntermediateDirectories: true)
            try "phy9\n".write(to: dir.appendingPathComponent("\(r)/phy80211/name"), atomically: true, encoding: .utf8)
            try "02:00:00:00:09:00\n".write(to: dir.appendingPathComponent("\(r)/address"), atomically: true, encoding: .utf8)
        }
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("eth0"), withIntermediateDirectories: true)
        return dir.path
    }

    func testNoRadioAtAll() async throws {
        let wifi = WiFiDirect(busAddress: "unix:path=/nonexistent/peerlink.sock", sysClassNet: try fakeSysfs(radios: []))
        do { _ = try await wifi.formGroup(interface: "wlan0"); XCTFail("formed a group without a radio") } catch {
            XCTAssertEqual(error as? WiFiError, .noRadio)
            XCTAssertTrue("\(error)".contains("no Wi-Fi radio"), "\(error)")
        }
        do { _ = try await wifi.probe(interface: "wlan0"); XCTFail() } catch { XCTAssertEqual(error as? WiFiError, .noRadio) }
        let none = await wifi.radios()
        XCTAssertEqual(none, [])
    }

    func testUnknownRadioNoBusAndNoSupplicant() async throws {
        let sysfs = try fakeSysfs(radios: ["wlan9"])
        let noBus = WiFiDirect(busAddress: "unix:path=/nonexistent/peerlink.sock", sysClassNet: sysfs)
        do { _ = try await noBus.startSoftAP(interface: "wlan4"); XCTFail() } catch { XCTAssertEqual(error as? WiFiError, .noSuchRadio("wlan4")) }
        do { _ = try await noBus.formGroup(interface: "wlan9"); XCTFail() } catch {
            guard case WiFiError.busUnavailable = error else { return XCTFail("\(error)") }
        }
        let probe = try await noBus.probe(interface: "wlan9")
        XCTAssertFalse(probe.p2p.available)
        XCTAssertTrue(probe.p2p.detail.contains("D-Bus"), probe.p2p.detail)

        let bus = try PrivateBus()
        defer { bus.stop() }
        let noDaemon = WiFiDirect(busAddress: bus.address, sysClassNet: sysfs)
        do { _ = try await noDaemon.formGroup(interface: "wlan9"); XCTFail() } catch {
            XCTAssertEqual(error as? WiFiError, .supplicantNotRunning)
            XCTAssertTrue("\(error)".contains("systemctl start wpa_supplicant"), "\(error)")
        }
        let creds = WiFiCredentials(kind: .p2pGroup, ssid: "DIRECT-xy", passphrase: "12345678", frequency: 2412, bssid: MACAddress("46:00:00:00:00:00")!)
        do { _ = try await noDaemon.joinGroup(interface: "wlan9", credentials: creds); XCTFail() } catch {
            XCTAssertEqual(error as? WiFiError, .supplicantNotRunning)
        }
        var bad = creds
        bad.passphrase = "short"
        do { _ = try await noDaemon.joinGroup(interface: "wlan9", credentials: bad); XCTFail() } catch {
            guard case WiFiError.invalidCredentials = error else { return XCTFail("\(error)") }
        }
        do { _ = try await noDaemon.formGroup(interface: "wlan9", frequency: 2413); XCTFail() } catch {
            guard case WiFiError.invalidArgument = error else { return XCTFail("\(error)") }
        }
    }
}
