import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkWiFiDirect

/// A radio NetworkManager manages, against a real NetworkManager, in the Wi-Fi lab VM
/// (`scripts/test-wifi.sh`): Debian's network-manager 1.42 (as Debian 12 and Raspberry Pi OS
/// Bookworm ship it) starts on node A's bus and adds A's radio to A's wpa_supplicant, as a Pi
/// does at boot (Hardware/bt-lab/guest-nm.sh). NetworkManager takes down every Wi-Fi Direct
/// group it did not start, so PeerLink says the radio offers no Wi-Fi Direct and refuses to
/// form a group there, before any GroupAdd. The documented fix (`nmcli device set RADIO
/// managed no`) hands the radio back: NetworkManager removes it from wpa_supplicant, PeerLink
/// forms a group, B joins, TCP crosses it both ways. Skipped unless `PEERLINK_LAB=1` and
/// `PEERLINK_LAB_RADIOS` ≥ 2.
final class NetworkManagerLabTests: XCTestCase {
    /// Bytes copied each way over the group once the radio is PeerLink's.
    let payload = 4 << 20

    func test1ManagedRadioIsRefusedUntilTheUserUnmanagesIt() async throws {
        let (a, b) = try labNodes()
        XCTAssertEqual(try a.supplicantInterfaces(), [], "wpa_supplicant starts with no interface, as the packaged service does")
        let genModeBefore = try addrGenMode(a.radio)
        // Whatever happens below, node A's NetworkManager does not outlive the test (stop is a
        // no-op when it is not running).
        var nmRunning = true
        defer { if nmRunning { _ = try? labShell("bash Hardware/bt-lab/guest-nm.sh stop 0") } }

        // NetworkManager starts and takes its radio, as at boot.
        let t0 = Date()
        let started = try labShell("bash Hardware/bt-lab/guest-nm.sh start 0")
        wifiFigure(String(format: "NetworkManager start (A): %.2f s: %@", Date().timeIntervalSince(t0),
                          started.trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertEqual(try a.supplicantInterfaces(), [a.radio], "NetworkManager added \(a.radio) to A's wpa_supplicant")
        let status = NetworkManagerProbe.status(of: a.radio, bus: try WPASupplicantBus(address: a.bus))
        XCTAssertTrue(status.manages, "\(status)")

        // PeerLink says why Wi-Fi Direct is out, and how to get it.
        let report = try await a.wifi.probe(interface: a.radio)
        labLog("probe with NetworkManager managing \(a.radio): \(report.p2p.detail) / fix: \(report.p2p.fix ?? "") / soft-AP: \(report.softAP.detail)")
        XCTAssertFalse(report.p2p.available, report.p2p.detail)
        XCTAssertFalse(report.softAP.available, report.softAP.detail)
        XCTAssertTrue(report.p2p.detail.contains("NetworkManager manages \(a.radio)"), report.p2p.detail)
        XCTAssertTrue(report.p2p.detail.contains("takes down every Wi-Fi Direct group"), report.p2p.detail)
        let fix = report.p2p.fix ?? ""
        XCTAssertTrue(fix.contains("nmcli device set \(a.radio) managed no"), fix)
        XCTAssertTrue(fix.contains("unmanaged-devices=interface-name:\(a.radio)"), fix)

        // Forming is refused before any GroupAdd: no group interface, wpa_supplicant holds only
        // NetworkManager's radio.
        let t1 = Date()
        do {
            let g = try await a.wifi.formGroup(interface: a.radio, frequency: 2412)
            XCTFail("formed a group (\(g.interface)) on a radio NetworkManager manages")
            await a.wifi.leave(g)
        } catch let WiFiError.unsupported(interface, why) {
            labLog(String(format: "formGroup refused in %.3f s: %@", Date().timeIntervalSince(t1), why))
            XCTAssertEqual(interface, a.radio)
            XCTAssertTrue(why.contains("NetworkManager manages"), why)
        }
        do {
            let ap = try await a.wifi.startSoftAP(interface: a.radio, frequency: 2437)
            XCTFail("started a soft-AP on a radio NetworkManager manages")
            await a.wifi.leave(ap)
        } catch let WiFiError.unsupported(interface, why) {
            XCTAssertEqual(interface, a.radio)
            XCTAssertTrue(why.contains("NetworkManager manages"), why)
        }
        XCTAssertEqual(try a.supplicantInterfaces(), [a.radio], "only NetworkManager's \(a.radio): no group interface was added")
        XCTAssertEqual(try groupInterfaces(), [], "no p2p-\(a.radio)-* interface appeared")

        // The user's fix: NetworkManager lets go of the radio.
        let t2 = Date()
        let unmanaged = try labShell("bash Hardware/bt-lab/guest-nm.sh unmanage 0")
        wifiFigure(String(format: "NetworkManager unmanage (A): %.2f s: %@", Date().timeIntervalSince(t2),
                          unmanaged.trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertEqual(try a.supplicantInterfaces(), [], "NetworkManager removed \(a.radio) from wpa_supplicant")
        XCTAssertEqual(NetworkManagerProbe.status(of: a.radio, bus: try WPASupplicantBus(address: a.bus)), .unmanaged)
        let fixed = try await a.wifi.probe(interface: a.radio)
        labLog("probe after nmcli device set \(a.radio) managed no: \(fixed.p2p.detail)")
        XCTAssertTrue(fixed.p2p.available, fixed.p2p.detail)

        // Now a group works, with NetworkManager still running.
        let t3 = Date()
        let owner = try await a.wifi.formGroup(interface: a.radio, frequency: 2412)
        wifiFigure(String(format: "p2p form after unmanage (A, GO): %.2f s total: %@", Date().timeIntervalSince(t3), describe(owner.timings)))
        XCTAssertEqual(owner.role, .groupOwner)
        XCTAssertTrue(owner.interface.hasPrefix("p2p-\(a.radio)-"), owner.interface)
        let t4 = Date()
        let client = try await b.wifi.joinGroup(interface: b.radio, credentials: owner.credentials)
        wifiFigure(String(format: "p2p join (B, client): %.2f s total: %@", Date().timeIntervalSince(t4), describe(client.timings)))
        XCTAssertEqual(client.role, .p2pClient)
        try await assertTCPBothWays(server: owner, client: client)
        // The group outlived NetworkManager's 1–2 s: it is still up.
        XCTAssertTrue(FileManager.default.fileExists(atPath: "/sys/class/net/\(owner.interface)"), "A's group is still up")
        XCTAssertTrue(a.wifi.isActive(owner))
        await b.wifi.leave(client)
        await a.wifi.leave(owner)

        // NetworkManager goes; the lab is as it was.
        let stopped = try labShell("bash Hardware/bt-lab/guest-nm.sh stop 0")
        nmRunning = false
        labLog(stopped.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(try addrGenMode(a.radio), genModeBefore, "\(a.radio)'s IPv6 addr_gen_mode is back")
        try assertLeftAsFound(a, b)
    }

    /// A TCP connection over the group's IPv6 link-local addresses carries `payload` bytes
    /// B→A, then A→B on the same connection.
    func assertTCPBothWays(server: WiFiGroup, client: WiFiGroup, file: StaticString = #filePath, line: UInt = #line) async throws {
        let listener = try LinkLocalSockets.listen(interface: server.interface)
        defer { listener.close() }
        async let accepted = listener.accept(timeout: .seconds(20))
        let fd = try await LinkLocalSockets.connect(to: server.linkLocalAddress, port: listener.port, interface: client.interface)
        defer { close(fd) }
        let (peerFD, peer) = try await accepted
        defer { close(peerFD) }
        XCTAssertTrue(peer.hasPrefix(client.linkLocalAddress), "A sees B's link-local address: \(peer) vs \(client.linkLocalAddress)", file: file, line: line)
        let rxA = try interfaceCounter(server.interface, "rx_bytes"), rxB = try interfaceCounter(client.interface, "rx_bytes")
        let up = try await copyOverTCP(sender: fd, receiver: peerFD, count: payload)
        let down = try await copyOverTCP(sender: peerFD, receiver: fd, count: payload)
        let gotA = try interfaceCounter(server.interface, "rx_bytes") - rxA, gotB = try interfaceCounter(client.interface, "rx_bytes") - rxB
        wifiFigure(String(format: "p2p after unmanage: %d MiB B->A in %.2f s, A->B in %.2f s; %@ rx +%llu, %@ rx +%llu",
                          payload >> 20, up.seconds, down.seconds, server.interface, gotA, client.interface, gotB))
        XCTAssertTrue(up.intact, "B->A: every byte arrived in order", file: file, line: line)
        XCTAssertTrue(down.intact, "A->B: every byte arrived in order", file: file, line: line)
        XCTAssertGreaterThanOrEqual(gotA, UInt64(payload), "B->A went through A's group interface", file: file, line: line)
        XCTAssertGreaterThanOrEqual(gotB, UInt64(payload), "A->B went through B's group interface", file: file, line: line)
    }

    func addrGenMode(_ interface: String) throws -> String {
        try String(contentsOfFile: "/proc/sys/net/ipv6/conf/\(interface)/addr_gen_mode", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
