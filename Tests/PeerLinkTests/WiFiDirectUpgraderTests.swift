import Foundation
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkWiFiDirect
import PeerLinkCore
import PeerLinkWire

/// The Wi-Fi Direct plug-in's host-side pieces: the parameters the host hands over inside
/// the session, and what a machine without a usable radio tells its peer. (Forming and
/// joining real groups runs in the VM lab with hwsim radios.)
final class WiFiDirectUpgraderTests: XCTestCase {
    let creds = WiFiCredentials(kind: .p2pGroup, ssid: "DIRECT-pl-ab12", passphrase: "k3y-of-twelve", frequency: 2437,
                                bssid: MACAddress(bytes: [2, 0, 0, 0, 1, 0])!, ownerDeviceAddress: MACAddress(bytes: [2, 0, 0, 0, 1, 1])!)

    func testParametersRoundTripAndEveryFaultIsNamed() throws {
        let p = WiFiDirectParameters(credentials: creds, address: "fe80::ff:fe00:100", port: 40123)
        XCTAssertEqual(try WiFiDirectParameters(p.encoded), p)
        func without(_ n: String) -> [LinkSetup.Parameter] { p.encoded.filter { $0.name != n } }
        func with(_ n: String, _ v: [UInt8]) -> [LinkSetup.Parameter] { without(n) + [.init(n, v)] }
        let bad: [([LinkSetup.Parameter], String)] = [
            (without("ssid"), "'ssid' is missing"),
            (without("port"), "'port' is missing"),
            (with("port", [0, 0]), "'port' is 0"),
            (with("port", [1]), "'port' is 1 bytes, not 2"),
            (with("bssid", [1, 2, 3]), "'bssid' is 3 bytes, not 6"),
            (with("kind", Array("mesh".utf8)), "'kind' is not known"),
            (with("ssid", [0xff]), "'ssid' is not UTF-8"),
            (with("addr", Array("10.0.0.1".utf8)), "is not an IPv6 link-local address"),
            (with("addr", Array("fe80::1%eth0".utf8)), "is not an IPv6 link-local address"),
            (with("freq", [0x30, 0x39]), "12345 MHz is not a Wi-Fi"),
            (with("psk", Array("short".utf8)), "pass"),
        ]
        for (params, message) in bad {
            XCTAssertThrowsError(try WiFiDirectParameters(params), message) { e in
                XCTAssertTrue("\(e)".hasPrefix("the host's Wi-Fi Direct parameters are unusable: "), "\(e)")
                XCTAssertTrue("\(e)".contains(message), "expected '\(message)' in '\(e)'")
            }
        }
    }

    /// What the timeline says of a set-up (`hosted`, the joiner's `link-up`).
    func testTheSetUpSummaryNamesEachStep() {
        var owner = WiFiGroup(id: WiFiGroupID(), role: .groupOwner, interface: "p2p-wlan0-0", radio: "wlan0", credentials: creds,
                              linkLocalAddress: "fe80::1", joinMethod: nil,
                              timings: [WiFiStepTiming(step: .addInterface, duration: .milliseconds(412)),
                                        WiFiStepTiming(step: .startGroup, duration: .milliseconds(1804)),
                                        WiFiStepTiming(step: .linkLocal, duration: .milliseconds(3))])
        owner.linkLocalState = .optimistic
        XCTAssertEqual(WiFiDirectUpgrader.summary(owner, ahead: nil),
                       "go on p2p-wlan0-0: add-interface 0.41 s, start-group 1.80 s, link-local 0.00 s (optimistic)")
        owner.linkLocalState = .inDAD
        XCTAssertTrue(WiFiDirectUpgrader.summary(owner, ahead: nil).hasSuffix("link-local 0.00 s (in-dad)"))
        let client = WiFiGroup(id: WiFiGroupID(), role: .p2pClient, interface: "p2p-wlan1-0", radio: "wlan1", credentials: creds,
                               linkLocalAddress: "fe80::2", joinMethod: .p2pClient,
                               timings: [WiFiStepTiming(step: .findOwner, duration: .milliseconds(100)),
                                         WiFiStepTiming(step: .linkLocal, duration: .milliseconds(960))])
        XCTAssertEqual(WiFiDirectUpgrader.summary(client, ahead: .milliseconds(450)),
                       "p2p-client on p2p-wlan1-0: add-interface 0.45 s ahead, find-owner 0.10 s, link-local 0.96 s")
        XCTAssertEqual(WiFiDirectUpgrader.summary(client, ahead: .zero), "p2p-client on p2p-wlan1-0: find-owner 0.10 s, link-local 0.96 s",
                       "a radio wpa_supplicant already had needed nothing ahead")
    }

    func testRandomParametersNeverCrash() {
        let names = ["kind", "ssid", "psk", "freq", "bssid", "owner", "addr", "port"]
        var rng = seededGenerator(self)
        for _ in 0..<5000 {
            var p = WiFiDirectParameters(credentials: creds, address: "fe80::1", port: 1).encoded
            let i = Int.random(in: 0..<p.count, using: &rng)
            p[i] = .init(names.randomElement(using: &rng) ?? "x", (0..<Int.random(in: 0...12, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
            _ = try? WiFiDirectParameters(p)
        }
    }

    func testAMachineWithoutARadioSaysSoToItsPeer() async throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("pl-no-radios-\(UUID())").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let u = WiFiDirectUpgrader(wifi: WiFiDirect(busAddress: nil, sysClassNet: empty))
        let a = await u.availability()
        XCTAssertEqual(a.roles, [])
        XCTAssertEqual(a.reason, "this machine has no Wi-Fi radio")
        let named = WiFiDirectUpgrader(wifi: WiFiDirect(busAddress: nil, sysClassNet: empty), interface: "wlan7")
        let b = await named.availability()
        XCTAssertEqual(b.roles, [])
        XCTAssertTrue(b.reason.hasPrefix("wlan7: "), b.reason)
    }

    func testWiFiDirectEndpointsNameTheirInterface() async {
        do {
            _ = try await WiFiDirectTransport().connect(to: TransportEndpoint(medium: .wifiDirect, host: "fe80::1", port: 9), timeout: .seconds(1))
            XCTFail("an endpoint without a zone cannot be dialled")
        } catch {
            XCTAssertTrue("\(error)".contains("names its group interface as the zone"), "\(error)")
        }
        XCTAssertThrowsError(try WiFiDirectTransport().listen(port: 0) { _ in })
        XCTAssertTrue(Medium.wifiDirect.traits.negotiated)
        XCTAssertEqual(Medium(rawValue: "wifi-direct").linkClass, .ip)
    }
}
