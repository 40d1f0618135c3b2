import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkWiFiDirect

/// A radio driven by a wpa_supplicant (or hostapd) other than the D-Bus one: found from what
/// `/proc` shows, and never added to the D-Bus wpa_supplicant. The lab test
/// (`WiFiDirectLabTests.test7…`) runs a real second wpa_supplicant.
final class OtherSupplicantTests: XCTestCase {
    let unix = """
        Num       RefCount Protocol Flags    Type St Inode Path
        0000000000000000: 00000002 00000000 00010000 0001 01 17890 /run/dbus/system_bus_socket
        0000000000000000: 00000002 00000000 00000000 0002 01 20112 /run/wpa_supplicant/wlan0
        0000000000000000: 00000002 00000000 00000000 0002 01 20113 /var/run/wpa_supplicant/p2p-dev-wlan0
        0000000000000000: 00000002 00000000 00000000 0002 01 20114 /run/hostapd/wlan1
        0000000000000000: 00000003 00000000 00000000 0001 03 20115
        0000000000000000: 00000002 00000000 00000000 0002 01 20116 @/tmp/dbus-abstract
        0000000000000000: 00000002 00000000 00000000 0002 01 20117 /tmp/wpa_ctrl_612-1
        0000000000000000: 00000002 00000000 00000000 0002 01 20118 /run/other/wlan0
        0000000000000000: 00000002 00000000 00000000 0002 01 20119 /run/wpa_supplicant/wlan0

        """

    func testControlSocketsOfTheRadioOnly() {
        XCTAssertEqual(OtherSupplicantScan.controlSockets(for: "wlan0", procNetUnix: unix), ["/run/wpa_supplicant/wlan0"])
        XCTAssertEqual(OtherSupplicantScan.controlSockets(for: "p2p-dev-wlan0", procNetUnix: unix), ["/var/run/wpa_supplicant/p2p-dev-wlan0"])
        XCTAssertEqual(OtherSupplicantScan.controlSockets(for: "wlan1", procNetUnix: unix), ["/run/hostapd/wlan1"])
        XCTAssertEqual(OtherSupplicantScan.program(ofControlSocket: "/run/hostapd/wlan1"), "hostapd")
        XCTAssertEqual(OtherSupplicantScan.controlSockets(for: "wlan2", procNetUnix: unix), [])
        XCTAssertEqual(OtherSupplicantScan.controlSockets(for: "", procNetUnix: unix), [])
        XCTAssertEqual(OtherSupplicantScan.controlSockets(for: "wlan0", procNetUnix: ""), [])
    }

    func testInterfacesOfAWpaSupplicantCommandLine() {
        // dhcpcd's hook (Raspberry Pi OS Bullseye), wpa_supplicant@.service, and the D-Bus one.
        let hook = OtherSupplicantScan.arguments(ofCmdline: Array("wpa_supplicant\0-B\0-c/etc/wpa_supplicant/wpa_supplicant.conf\0-iwlan0\0".utf8))
        XCTAssertEqual(hook, ["wpa_supplicant", "-B", "-c/etc/wpa_supplicant/wpa_supplicant.conf", "-iwlan0"])
        XCTAssertEqual(OtherSupplicantScan.interfaces(inArguments: hook), ["wlan0"])
        XCTAssertEqual(OtherSupplicantScan.interfaces(inArguments: ["/sbin/wpa_supplicant", "-c", "x.conf", "-Dnl80211,wext", "-i", "wlan1", "-N", "-i", "wlan2"]),
                       ["wlan1", "wlan2"])
        XCTAssertEqual(OtherSupplicantScan.interfaces(inArguments: ["/sbin/wpa_supplicant", "-u", "-s", "-O", "DIR=/run/wpa_supplicant GROUP=netdev"]), [])
        XCTAssertEqual(OtherSupplicantScan.interfaces(inArguments: ["wpa_supplicant", "-i"]), [], "a dangling -i names nothing")
        XCTAssertEqual(OtherSupplicantScan.arguments(ofCmdline: []), [])
    }

    /// `find` over a /proc-shaped directory: a socket, a process, both, and the D-Bus
    /// wpa_supplicant's own process left out.
    func testFindInAProcTree() throws {
        let proc = FileManager.default.temporaryDirectory.appendingPathComponent("pl-proc-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: proc) }
        func process(_ pid: Int, _ comm: String, _ argv: [String]) throws {
            try FileManager.default.createDirectory(atPath: "\(proc)/\(pid)", withIntermediateDirectories: true)
            try (comm + "\n").write(toFile: "\(proc)/\(pid)/comm", atomically: true, encoding: .utf8)
            try Data(argv.joined(separator: "\0").utf8 + [0]).write(to: URL(fileURLWithPath: "\(proc)/\(pid)/cmdline"))
        }
        try FileManager.default.createDirectory(atPath: "\(proc)/net", withIntermediateDirectories: true)
        try unix.write(toFile: "\(proc)/net/unix", atomically: true, encoding: .utf8)
        try process(536, "wpa_supplicant", ["/sbin/wpa_supplicant", "-u", "-s", "-i", "wlan3"])
        try process(823, "wpa_supplicant", ["wpa_supplicant", "-B", "-c", "/etc/wpa_supplicant/wpa_supplicant.conf", "-iwlan0"])
        try process(900, "dhcpcd", ["dhcpcd", "-iwlan2"])

        let both = try XCTUnwrap(OtherSupplicantScan.find("wlan0", excludingPID: 536, proc: proc))
        XCTAssertEqual(both.program, "wpa_supplicant")
        XCTAssertEqual(both.evidence, ["control socket /run/wpa_supplicant/wlan0",
                                       "pid 823: wpa_supplicant -B -c /etc/wpa_supplicant/wpa_supplicant.conf -iwlan0"])
        XCTAssertTrue(both.why("wlan0").hasPrefix("wlan0 is driven by a wpa_supplicant other than the one on D-Bus"), both.why("wlan0"))
        XCTAssertEqual(OtherSupplicantScan.find("wlan1", proc: proc)?.program, "hostapd")
        XCTAssertNil(OtherSupplicantScan.find("wlan2", proc: proc), "not a wpa_supplicant process")
        XCTAssertNil(OtherSupplicantScan.find("wlan3", excludingPID: 536, proc: proc), "the D-Bus wpa_supplicant itself")
        XCTAssertEqual(OtherSupplicantScan.find("wlan3", proc: proc)?.evidence, ["pid 536: /sbin/wpa_supplicant -u -s -i wlan3"])
        XCTAssertNil(OtherSupplicantScan.find("wlan0", proc: proc + "/missing"), "an unreadable /proc finds nothing")
    }

    /// The rules: neither Wi-Fi Direct nor soft-AP on such a radio, with why and what to do.
    func testNeitherRoleOnARadioAnotherProgramDrives() {
        let other = OtherSupplicant(program: "wpa_supplicant", evidence: ["control socket /run/wpa_supplicant/wlan0"])
        let f = RadioFacts(interface: "wlan0", phy: "phy0", kernelTypes: [.station, .accessPoint, .p2pClient, .p2pGroupOwner, .p2pDevice],
                           supplicant: .notManaging, p2pDevice: .none, networkManager: .notRunning, otherDriver: other)
        let r = RadioCapabilities.evaluate(f)
        XCTAssertFalse(r.p2p.available)
        XCTAssertFalse(r.softAP.available)
        XCTAssertTrue(r.p2p.detail.contains("/run/wpa_supplicant/wlan0"), r.p2p.detail)
        XCTAssertTrue(r.p2p.fix?.contains("--wifi") ?? false, r.p2p.fix ?? "")
        XCTAssertTrue(r.supplicant.contains("does not manage wlan0: wlan0 is driven by"), r.supplicant)
        let ap = OtherSupplicant(program: "hostapd", evidence: ["control socket /run/hostapd/wlan0"])
        XCTAssertTrue(ap.why("wlan0").hasPrefix("wlan0 is driven by hostapd (control socket /run/hostapd/wlan0)"), ap.why("wlan0"))
        XCTAssertTrue(ap.fix("wlan0").hasPrefix("stop hostapd on wlan0"), ap.fix("wlan0"))
    }

    func testParsersSurviveGarbage() {
        var rng = WiFiDirectFuzzTests.SplitMix(state: 0x0C7E_25A1)
        for _ in 0..<2000 {
            let n = Int.random(in: 0...300, using: &rng)
            let bytes = (0..<n).map { _ in [UInt8(ascii: " "), UInt8(ascii: "/"), 10, 0, UInt8(ascii: "w"), UInt8(ascii: "-"), UInt8(ascii: "i"),
                                             UInt8.random(in: 0...255, using: &rng)][Int.random(in: 0..<8, using: &rng)] }
            let text = String(decoding: bytes, as: UTF8.self)
            _ = OtherSupplicantScan.controlSockets(for: "w", procNetUnix: "header\n" + text)
            let argv = OtherSupplicantScan.arguments(ofCmdline: bytes)
            for i in OtherSupplicantScan.interfaces(inArguments: argv) { XCTAssertFalse(i.isEmpty) }
        }
    }
}
