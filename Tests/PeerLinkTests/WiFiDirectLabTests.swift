import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkWiFiDirect

/// Wi-Fi Direct and soft-AP for real, in the lab VM (`scripts/test-wifi.sh`): two
/// mac80211_hwsim radios, each with its own wpa_supplicant on its own bus, started as
/// Debian's service starts it (D-Bus only, no interface). Node A (wlan0) forms, node B (wlan1)
/// joins with the credentials A hands over (in the product they travel inside the Noise
/// session), TCP crosses the simulated air between their IPv6 link-local addresses, A leaves,
/// B hears the group end, and wpa_supplicant is left as PeerLink found it. Skipped unless
/// `PEERLINK_LAB=1` and `PEERLINK_LAB_RADIOS` ≥ 2.
final class WiFiDirectLabTests: XCTestCase {
    /// Bytes copied over each group (raw TCP): enough to see the radio's counters move and to
    /// time the copy, small enough for the emulated CPU.
    let payload = 16 << 20

    func test1WiFiDirectGroupCarriesTCPAndIsTornDown() async throws {
        let (a, b) = try labNodes()
        XCTAssertEqual(try a.supplicantInterfaces(), [], "wpa_supplicant starts with no interface, as the packaged service does")

        let t0 = Date()
        let owner = try await a.wifi.formGroup(interface: a.radio, frequency: 2412)
        let formed = Date().timeIntervalSince(t0)
        wifiFigure(String(format: "p2p form (A, GO): %.2f s total: %@", formed, describe(owner.timings)))
        XCTAssertEqual(owner.role, .groupOwner)
        XCTAssertTrue(owner.interface.hasPrefix("p2p-\(a.radio)-"), owner.interface)
        XCTAssertTrue(owner.linkLocalAddress.hasPrefix("fe80:"), owner.linkLocalAddress)
        XCTAssertEqual(owner.credentials.kind, .p2pGroup)
        XCTAssertEqual(owner.credentials.frequency, 2412)
        XCTAssertTrue(owner.credentials.ssid.hasPrefix("DIRECT-"), owner.credentials.ssid)
        XCTAssertNoThrow(try owner.credentials.validate())
        XCTAssertNotNil(owner.credentials.ownerDeviceAddress, "hwsim has a P2P-device wdev: its address lets B find A on one channel")

        // The credentials cross "the session" (here: in-process, through their Codable form).
        let handed = try JSONDecoder().decode(WiFiCredentials.self, from: JSONEncoder().encode(owner.credentials))
        let t1 = Date()
        let client = try await b.wifi.joinGroup(interface: b.radio, credentials: handed)
        let joined = Date().timeIntervalSince(t1)
        wifiFigure(String(format: "p2p join (B, client): %.2f s total: %@", joined, describe(client.timings)))
        XCTAssertEqual(client.role, .p2pClient)
        XCTAssertEqual(client.joinMethod, .p2pClient)
        XCTAssertTrue(client.interface.hasPrefix("p2p-\(b.radio)-"), client.interface)
        XCTAssertTrue(client.timings.contains { $0.step == .findOwner }, "B looked for A on the group's channel first")

        try await assertTCPCrossesTheAir(server: owner, client: client, label: "p2p")

        // A leaves; B hears the group end.
        let events = b.wifi.events(of: client)
        let t2 = Date()
        await a.wifi.leave(owner)
        let ended = await firstEnd(of: events, timeout: 30)
        wifiFigure(String(format: "p2p: B saw the group end %.2f s after A began leaving (%@)", Date().timeIntervalSince(t2),
                          ended.map { "\($0)" } ?? "no event"))
        XCTAssertNotNil(ended, "B heard nothing within 30 s of A leaving")
        XCTAssertFalse(a.wifi.isActive(owner))
        await b.wifi.leave(client)
        XCTAssertFalse(b.wifi.isActive(client))
        try assertLeftAsFound(a, b)
    }

    func test2SoftAPCarriesTCPAndIsTornDown() async throws {
        let (a, b) = try labNodes()
        let t0 = Date()
        let ap = try await a.wifi.startSoftAP(interface: a.radio, frequency: 2437)
        wifiFigure(String(format: "soft-AP start (A): %.2f s total: %@", Date().timeIntervalSince(t0), describe(ap.timings)))
        XCTAssertEqual(ap.role, .accessPoint)
        XCTAssertEqual(ap.interface, a.radio)
        XCTAssertEqual(ap.credentials.kind, .softAP)
        XCTAssertNoThrow(try ap.credentials.validate())

        let t1 = Date()
        let station = try await b.wifi.joinGroup(interface: b.radio, credentials: ap.credentials)
        wifiFigure(String(format: "soft-AP join (B, station): %.2f s total: %@", Date().timeIntervalSince(t1), describe(station.timings)))
        XCTAssertEqual(station.role, .station)
        XCTAssertEqual(station.interface, b.radio)

        try await assertTCPCrossesTheAir(server: ap, client: station, label: "soft-AP")

        let events = b.wifi.events(of: station)
        let t2 = Date()
        await a.wifi.leave(ap)
        let ended = await firstEnd(of: events, timeout: 30)
        wifiFigure(String(format: "soft-AP: B saw the AP go %.2f s after A began leaving (%@)", Date().timeIntervalSince(t2),
                          ended.map { "\($0)" } ?? "no event"))
        XCTAssertNotNil(ended, "B heard nothing within 30 s of the AP stopping")
        await b.wifi.leave(station)
        try assertLeftAsFound(a, b)
    }

    /// A radio that is not there, and a radio whose wpa_supplicant cannot give it P2P (one
    /// P2P device per wpa_supplicant process, already on wlan0): clear errors with reasons,
    /// and nothing left behind in wpa_supplicant.
    func test3RadiosWithoutP2PGiveClearErrors() async throws {
        let (a, b) = try labNodes()
        do {
            _ = try await a.wifi.formGroup(interface: "wlan7")
            XCTFail("formed a group on a radio that does not exist")
        } catch {
            XCTAssertEqual(error as? WiFiError, .noSuchRadio("wlan7"))
            labLog("no such radio: \(error)")
        }

        let owner = try await a.wifi.formGroup(interface: a.radio)
        do {
            _ = try await a.wifi.formGroup(interface: b.radio)
            XCTFail("a second P2P group from the same wpa_supplicant on another radio")
        } catch let WiFiError.unsupported(interface, why) {
            XCTAssertEqual(interface, b.radio)
            XCTAssertTrue(why.contains(a.radio) || why.contains("P2P"), why)
            labLog("radio without P2P: \(WiFiError.unsupported(interface: interface, why: why))")
        }
        // Removing the interface the failed attempt added would end every P2P group of that
        // wpa_supplicant: it stays until the owner's group is left.
        XCTAssertTrue(FileManager.default.fileExists(atPath: "/sys/class/net/\(owner.interface)"), "A's group survived the failed attempt")
        XCTAssertEqual(try a.supplicantInterfaces().filter { $0.hasPrefix("p2p-") }, [owner.interface])
        let report = try await a.wifi.probe(interface: b.radio)
        XCTAssertFalse(report.p2p.available, report.p2p.detail)
        labLog("probe of \(b.radio) through A's wpa_supplicant: \(report.p2p.detail)")
        await a.wifi.leave(owner)
        try assertLeftAsFound(a, b)
    }

    /// A machine set up for optimistic DAD (the administrator's sysctl.d lines that
    /// `peerlink doctor` suggests), with the owner's detection stretched to 20 s: the owner
    /// (the host, which is dialled) hands out its optimistic address at once, B joins, waits
    /// for its own detection (a dialler cannot resolve neighbours from an optimistic address)
    /// and connects while A's address is still optimistic. Without taking optimistic
    /// addresses, forming would wait the 20 s out and A's address would be past DAD here.
    func test4OwnerIsDialledOnItsOptimisticAddress() async throws {
        let (a, b) = try labNodes()
        @Sendable func setting(_ key: String) -> String { "/proc/sys/net/ipv6/conf/default/\(key)" }
        for key in ["optimistic_dad", "use_optimistic", "dad_transmits"] {
            let before = try String(contentsOfFile: setting(key), encoding: .utf8)
            addTeardownBlock { try before.write(toFile: setting(key), atomically: false, encoding: .utf8) }
        }
        let transmits = try String(contentsOfFile: setting("dad_transmits"), encoding: .utf8)
        for (key, value) in [("optimistic_dad", "1"), ("use_optimistic", "1"), ("dad_transmits", "20")] {
            try value.write(toFile: setting(key), atomically: false, encoding: .utf8)
        }
        XCTAssertTrue(OptimisticDAD.read().isOn, "doctor sees the setting")

        let owner = try await a.wifi.formGroup(interface: a.radio, frequency: 2412)
        wifiFigure("optimistic: p2p form (A, GO): \(describe(owner.timings))")
        try assertLinkLocal(of: owner, is: "optimistic")
        // B's group interface gets the usual single probe.
        try transmits.write(toFile: setting("dad_transmits"), atomically: false, encoding: .utf8)
        let client = try await b.wifi.joinGroup(interface: b.radio, credentials: owner.credentials)
        wifiFigure("optimistic: p2p join (B, client): \(describe(client.timings))")
        try assertLinkLocal(of: client, is: "usable")
        try await assertTCPCrossesTheAir(server: owner, client: client, label: "optimistic p2p") {
            try self.assertLinkLocal(of: owner, is: "optimistic")
        }
        await a.wifi.leave(owner)
        await b.wifi.leave(client)
        try assertLeftAsFound(a, b)
    }

    /// The upgrade's host does not wait for DAD (`formGroup(waitForDAD: false)`), on the
    /// kernel's settings as shipped, with the owner's DAD stretched to 10 s so that it surely
    /// still runs when forming returns: A hands out an address the kernel still lists as
    /// tentative, B joins meanwhile, and once A's DAD ends that same address carries TCP.
    func test5OwnerHandsOutItsAddressDuringDAD() async throws {
        let (a, b) = try labNodes()
        let path = "/proc/sys/net/ipv6/conf/default/dad_transmits"
        let transmits = try String(contentsOfFile: path, encoding: .utf8)
        addTeardownBlock { try transmits.write(toFile: path, atomically: false, encoding: .utf8) }
        try "10".write(toFile: path, atomically: false, encoding: .utf8)
        XCTAssertFalse(OptimisticDAD.read().isOn, "the lab's kernel settings as shipped")

        let owner = try await a.wifi.formGroup(interface: a.radio, frequency: 2412, waitForDAD: false)
        wifiFigure("in DAD: p2p form (A, GO): \(describe(owner.timings))")
        XCTAssertEqual(owner.linkLocalState, .inDAD)
        try assertLinkLocal(of: owner, is: "tentative")
        try transmits.write(toFile: path, atomically: false, encoding: .utf8)
        let client = try await b.wifi.joinGroup(interface: b.radio, credentials: owner.credentials)
        try assertLinkLocal(of: client, is: "usable")
        // A's address becomes usable as it was handed out (20 s: ten probes a second apart).
        var usable = false
        for _ in 0..<100 where !usable {
            usable = IPv6LinkLocal.usable(on: owner.interface, in: try String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8)) == owner.linkLocalAddress
            if !usable { try await Task.sleep(nanoseconds: 200_000_000) }
        }
        XCTAssertTrue(usable, "A's handed-out address left DAD")
        try await assertTCPCrossesTheAir(server: owner, client: client, label: "p2p handed out in DAD")
        await a.wifi.leave(owner)
        await b.wifi.leave(client)
        try assertLeftAsFound(a, b)
    }

    // MARK: - Checks

    /// B dials A's link-local address with its socket bound to its own group interface and
    /// copies `payload` bytes; the bytes must show up on B's radio counter (not on loopback).
    /// `connected` runs once the connection is accepted, before the copy.
    func assertTCPCrossesTheAir(server: WiFiGroup, client: WiFiGroup, label: String,
                                connected: () throws -> Void = {}) async throws {
        let listener = try LinkLocalSockets.listen(interface: server.interface)
        defer { listener.close() }
        let txBefore = try interfaceCounter(client.interface, "tx_bytes")
        let rxBefore = try interfaceCounter(server.interface, "rx_bytes")
        let loBefore = try interfaceCounter("lo", "tx_bytes")
        let t0 = Date()
        async let accepted = listener.accept(timeout: .seconds(20))
        let fd = try await LinkLocalSockets.connect(to: server.linkLocalAddress, port: listener.port, interface: client.interface)
        defer { close(fd) }
        let (peerFD, peer) = try await accepted
        defer { close(peerFD) }
        wifiFigure(String(format: "%@: TCP connect [%@]:%d from %@ in %.3f s (peer %@)", label,
                          LinkLocalSockets.scoped(server.linkLocalAddress, interface: client.interface), Int(listener.port),
                          client.interface, Date().timeIntervalSince(t0), peer))
        XCTAssertTrue(peer.hasPrefix(client.linkLocalAddress), "A sees B's link-local address: \(peer) vs \(client.linkLocalAddress)")
        try connected()

        let (secs, intact) = try await copyOverTCP(sender: fd, receiver: peerFD, count: payload)
        XCTAssertTrue(intact, "every byte arrived in order")
        let tx = try interfaceCounter(client.interface, "tx_bytes") - txBefore
        let rx = try interfaceCounter(server.interface, "rx_bytes") - rxBefore
        let lo = try interfaceCounter("lo", "tx_bytes") - loBefore
        wifiFigure(String(format: "%@: %d MiB raw TCP B->A in %.2f s = %.2f MB/s; %@ tx +%llu, %@ rx +%llu, lo tx +%llu", label,
                          payload >> 20, secs, Double(payload) / secs / 1e6, client.interface, tx, server.interface, rx, lo))
        XCTAssertGreaterThanOrEqual(tx, UInt64(payload), "the bytes left through B's radio")
        XCTAssertGreaterThanOrEqual(rx, UInt64(payload), "the bytes came in through A's radio")
        XCTAssertLessThan(lo, UInt64(payload / 16), "the copy did not go through loopback")
    }

    /// A held radio (a session standing by) stays under wpa_supplicant through a group formed
    /// and left, so the group needs no `CreateInterface`; the last release takes it out.
    func test6HeldRadioStaysThroughAGroupAndGoesWithTheLastRelease() async throws {
        let (a, b) = try labNodes()
        XCTAssertEqual(try a.supplicantInterfaces(), [])
        let added = try await a.wifi.holdRadio(interface: a.radio)
        wifiFigure(String(format: "radio held ahead (A): add-interface %.2f s", seconds(added)))
        XCTAssertGreaterThan(added, .zero, "the radio was added")
        XCTAssertEqual(try a.supplicantInterfaces(), [a.radio])
        let again = try await a.wifi.holdRadio(interface: a.radio)
        XCTAssertEqual(again, .zero, "already there")

        let owner = try await a.wifi.formGroup(interface: a.radio, frequency: 2412)
        XCTAssertFalse(owner.timings.contains { $0.step == .addInterface }, "forming did not add the radio: \(describe(owner.timings))")
        await a.wifi.leave(owner)
        XCTAssertEqual(try a.supplicantInterfaces(), [a.radio], "leaving the group kept the held radio")

        await a.wifi.releaseRadio(interface: a.radio)
        XCTAssertEqual(try a.supplicantInterfaces(), [a.radio], "one hold is left")
        await a.wifi.releaseRadio(interface: a.radio)
        try assertLeftAsFound(a, b)
    }

    /// A field node runs for weeks and a package upgrade restarts wpa_supplicant: a held
    /// radio is added to the new one without waiting for the next group.
    func test8HeldRadioComesBackAfterWpaSupplicantRestarts() async throws {
        let (a, b) = try labNodes()
        _ = try await a.wifi.holdRadio(interface: a.radio)
        XCTAssertEqual(try a.supplicantInterfaces(), [a.radio])
        try labShell("bash Hardware/bt-lab/guest-wifi.sh stop-supplicant 0 && bash Hardware/bt-lab/guest-wifi.sh supplicant 0")
        let back = await waitUntil(timeout: 20) { (try? a.supplicantInterfaces()) == [a.radio] }
        XCTAssertTrue(back, "the held radio is under the new wpa_supplicant: \((try? a.supplicantInterfaces()) ?? [])")
        let owner = try await a.wifi.formGroup(interface: a.radio, frequency: 2412)
        XCTAssertFalse(owner.timings.contains { $0.step == .addInterface }, describe(owner.timings))
        await a.wifi.leave(owner)
        await a.wifi.releaseRadio(interface: a.radio)
        try assertLeftAsFound(a, b)

        // A radio someone else added (as NetworkManager does) is theirs to add again.
        _ = try WPASupplicantBus(address: a.bus).createInterface(a.radio)
        let ahead = try await a.wifi.holdRadio(interface: a.radio)
        XCTAssertEqual(ahead, .zero, "already there")
        try labShell("bash Hardware/bt-lab/guest-wifi.sh stop-supplicant 0 && bash Hardware/bt-lab/guest-wifi.sh supplicant 0")
        try await Task.sleep(nanoseconds: 5_000_000_000)
        XCTAssertEqual(try a.supplicantInterfaces(), [], "PeerLink did not add its owner's radio back")
        await a.wifi.releaseRadio(interface: a.radio)
        try assertLeftAsFound(a, b)
    }

    /// A radio driven by a wpa_supplicant of its own, as dhcpcd's hook starts one on Raspberry
    /// Pi OS Bullseye (`wpa_supplicant -B -c CONF -i wlan0`): PeerLink reports it and never
    /// adds the radio to the D-Bus wpa_supplicant (which would cut that one's Wi-Fi); the other
    /// wpa_supplicant keeps answering. Then the same without a control socket, found by its
    /// command line.
    func test7RadioDrivenByAnotherWpaSupplicantIsLeftAlone() async throws {
        let (a, b) = try labNodes()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-other-wpa-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        func startOther(controlSocket: Bool) throws {
            let conf = (controlSocket ? "ctrl_interface=DIR=/run/wpa_supplicant GROUP=netdev\n" : "") + "update_config=0\ncountry=GB\n"
            try conf.write(toFile: "\(dir)/other.conf", atomically: true, encoding: .utf8)
            try labShell("/sbin/wpa_supplicant -B -c \(dir)/other.conf -i \(a.radio) -Dnl80211 -P \(dir)/other.pid -f \(dir)/other.log")
        }
        func stopOther() {
            try? stopDaemon("\(dir)/other.pid")
            try? FileManager.default.removeItem(atPath: "\(dir)/other.pid")
        }
        defer { stopOther(); try? FileManager.default.removeItem(atPath: dir) }

        try startOther(controlSocket: true)
        let report = try await a.wifi.probe(interface: a.radio)
        labLog("probe with another wpa_supplicant on \(a.radio): \(report.p2p.detail) / fix: \(report.p2p.fix ?? "")")
        XCTAssertFalse(report.p2p.available)
        XCTAssertFalse(report.softAP.available)
        XCTAssertTrue(report.p2p.detail.contains("control socket /run/wpa_supplicant/\(a.radio)"), report.p2p.detail)
        XCTAssertTrue(report.p2p.detail.contains("-i \(a.radio)"), "the process too: \(report.p2p.detail)")
        do {
            _ = try await a.wifi.formGroup(interface: a.radio, frequency: 2412)
            XCTFail("formed a group on a radio another wpa_supplicant drives")
        } catch let WiFiError.unsupported(interface, why) {
            XCTAssertEqual(interface, a.radio)
            XCTAssertTrue(why.contains("PeerLink leaves it alone"), why)
        }
        try await assertHoldRefused(a, "another wpa_supplicant")
        let pong = try labShell("wpa_cli -p /run/wpa_supplicant -i \(a.radio) ping")
        XCTAssertTrue(pong.contains("PONG"), "the other wpa_supplicant still drives \(a.radio): \(pong)")

        stopOther()
        try startOther(controlSocket: false)
        let quiet = try await a.wifi.probe(interface: a.radio)
        XCTAssertFalse(quiet.p2p.available, "found without a control socket: \(quiet.p2p.detail)")
        XCTAssertTrue(quiet.p2p.detail.contains("pid "), quiet.p2p.detail)
        XCTAssertFalse(quiet.p2p.detail.contains("control socket"), quiet.p2p.detail)
        stopOther()

        // Gone: the radio is usable again.
        let after = try await a.wifi.probe(interface: a.radio)
        XCTAssertTrue(after.p2p.available, after.p2p.detail)

        // hostapd running an access point on B's radio, with its control socket.
        let ap = "interface=\(b.radio)\ndriver=nl80211\nssid=pl-other-ap\nhw_mode=g\nchannel=6\nctrl_interface=/run/hostapd\n"
        try ap.write(toFile: "\(dir)/hostapd.conf", atomically: true, encoding: .utf8)
        try labShell("/usr/sbin/hostapd -B -P \(dir)/hostapd.pid \(dir)/hostapd.conf")
        defer { try? stopDaemon("\(dir)/hostapd.pid") }
        let apReport = try await b.wifi.probe(interface: b.radio)
        labLog("probe with hostapd on \(b.radio): \(apReport.p2p.detail)")
        XCTAssertFalse(apReport.p2p.available)
        XCTAssertTrue(apReport.p2p.detail.contains("driven by hostapd (control socket /run/hostapd/\(b.radio))"), apReport.p2p.detail)
        try await assertHoldRefused(b, "hostapd")
        try stopDaemon("\(dir)/hostapd.pid")
        try assertLeftAsFound(a, b)
    }

    /// `holdRadio` refuses `node`'s radio, which `driver` drives, and the node's wpa_supplicant
    /// was never asked to add it.
    func assertHoldRefused(_ node: WiFiLabNode, _ driver: String, file: StaticString = #filePath, line: UInt = #line) async throws {
        do {
            _ = try await node.wifi.holdRadio(interface: node.radio)
            XCTFail("held a radio \(driver) drives", file: file, line: line)
        } catch WiFiError.unsupported {}
        await node.wifi.releaseRadio(interface: node.radio)
        XCTAssertEqual(try node.supplicantInterfaces(), [], "wpa_supplicant was never asked to add \(node.radio)", file: file, line: line)
    }

    /// Stops the daemon whose pid is in `pidFile` (SIGTERM, then up to 10 s for it to exit:
    /// it removes its control socket and P2P device on the way out).
    func stopDaemon(_ pidFile: String) throws {
        try labShell("p=$(cat \(pidFile)) && kill $p && for i in $(seq 100); do kill -0 $p 2>/dev/null || exit 0; sleep 0.1; done; exit 1")
    }

    /// The kernel's word on the group's link-local address now ("usable", "optimistic").
    func assertLinkLocal(of group: WiFiGroup, is state: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let status = IPv6LinkLocal.status(of: group.interface, in: try String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8))
        labLog("\(group.interface): \(status)")
        XCTAssertTrue(status.contains("\(group.linkLocalAddress) \(state)"), status, file: file, line: line)
    }
}
