import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkDBus
@testable import PeerLinkWiFiDirect

/// When a set-up ends, from wpa_supplicant's signals alone (WiFiSetupWatch, pure): success,
/// failures that end it at once, and failed attempts that end it after wpa_supplicant retried.
final class WiFiSetupWatchTests: XCTestCase {
    let radio = "/fi/w1/wpa_supplicant1/Interfaces/1"
    let group = "/fi/w1/wpa_supplicant1/Interfaces/2"

    func changed(_ path: String, _ props: [String: DBusValue]) -> WPASignal {
        WPASignal(path: path, interface: WPASupplicantBus.interfaceAPI, member: "PropertiesChanged", args: [.propertyDictionary(props)])
    }

    func p2p(_ member: String, _ args: [DBusValue]) -> WPASignal {
        WPASignal(path: radio, interface: WPASupplicantBus.p2pAPI, member: member, args: args)
    }

    func groupStarted(role: String) -> WPASignal {
        p2p("GroupStarted", [.propertyDictionary(["interface_object": .objectPath(group), "group_object": .objectPath(group + "/Groups/x"),
                                                   "role": .string(role)])])
    }

    func interfaceAdded(_ path: String, _ name: String) -> WPASignal {
        WPASignal(path: WPASupplicantBus.rootPath, interface: WPASupplicantBus.service, member: "InterfaceAdded",
                  args: [.objectPath(path), .propertyDictionary(["Ifname": .string(name)])])
    }

    func run(_ w: inout WiFiSetupWatch, _ signals: [WPASignal]) -> WiFiSetupWatch.Verdict? {
        var last: WiFiSetupWatch.Verdict?
        for s in signals { last = w.handle(s) }
        return last
    }

    func testAStationThatCompletesIsDone() {
        var w = WiFiSetupWatch(goal: .network, radioPath: radio)
        XCTAssertNil(w.handle(changed(radio, ["State": .string("associating")])))
        XCTAssertNil(w.handle(changed(radio, ["State": .string("4way_handshake")])))
        XCTAssertEqual(w.handle(changed(radio, ["State": .string("completed")])), .completed)
    }

    func testAWrongPassphraseEndsTheJoinAtOnceWithThatReason() {
        var w = WiFiSetupWatch(goal: .network, radioPath: radio)
        let v = run(&w, [changed(radio, ["State": .string("4way_handshake")]),
                         WPASignal(path: radio, interface: WPASupplicantBus.interfaceAPI, member: "PskMismatch", args: [])])
        XCTAssertEqual(v, .failed(.wrongPassphrase(evidence: "PskMismatch")))
        XCTAssertEqual(WiFiError.setupFailed(step: "connect", .wrongPassphrase(evidence: "PskMismatch")).description,
                       "Wi-Fi step 'connect' failed: wrong passphrase (PskMismatch)")
        // The verdict stands: a later `completed` does not undo it.
        XCTAssertEqual(w.handle(changed(radio, ["State": .string("completed")])), .failed(.wrongPassphrase(evidence: "PskMismatch")))
    }

    /// wpa_supplicant 2.10 (Debian 12) has no PskMismatch signal: what it sends on D-Bus for a
    /// wrong key, as the lab's log showed ("4-Way Handshake failed - pre-shared key may be
    /// incorrect" right after "CTRL-EVENT-DISCONNECTED reason=15").
    func testAWrongPassphraseIsReadFromADisconnectDuringTheHandshakeIn210() {
        var w = WiFiSetupWatch(goal: .network, radioPath: radio)
        XCTAssertNil(w.handle(changed(radio, ["State": .string("associating")])))
        XCTAssertNil(w.handle(changed(radio, ["State": .string("associated")])))
        XCTAssertNil(w.handle(changed(radio, ["State": .string("4way_handshake")])))
        let v = w.handle(changed(radio, ["DisconnectReason": .int32(15), "State": .string("disconnected")]))
        XCTAssertEqual(v, .failed(.wrongPassphrase(evidence: "the 4-way handshake failed: DisconnectReason 15")))
        XCTAssertEqual(WiFiError.setupFailed(step: "connect", .wrongPassphrase(evidence: "the 4-way handshake failed: DisconnectReason 15")).description,
                       "Wi-Fi step 'connect' failed: wrong passphrase (the 4-way handshake failed: DisconnectReason 15)")
        // Both in one signal (flushed together) read the same.
        var one = WiFiSetupWatch(goal: .network, radioPath: radio)
        XCTAssertEqual(one.handle(changed(radio, ["DisconnectReason": .int32(-15), "State": .string("4way_handshake")])),
                       .failed(.wrongPassphrase(evidence: "the 4-way handshake failed: DisconnectReason -15")))
        // Not during the handshake, or this side's "IE in 4-way differs": not a wrong key.
        var other = WiFiSetupWatch(goal: .network, radioPath: radio)
        XCTAssertNil(other.handle(changed(radio, ["State": .string("associating")])))
        XCTAssertNil(other.handle(changed(radio, ["DisconnectReason": .int32(2), "State": .string("disconnected")])))
        XCTAssertNil(other.handle(changed(radio, ["State": .string("4way_handshake")])))
        XCTAssertNil(other.handle(changed(radio, ["DisconnectReason": .int32(-17), "State": .string("disconnected")])))
        XCTAssertEqual(other.failedAttempts, 1)
    }

    func testRejectionsAndRemoteDisconnectsEndItAfterTheAllowedAttempts() {
        var w = WiFiSetupWatch(goal: .network, radioPath: radio)
        XCTAssertNil(w.handle(changed(radio, ["AuthStatusCode": .int32(17)])))
        XCTAssertNil(w.handle(changed(radio, ["AssocStatusCode": .int32(17), "State": .string("disconnected")])))
        let v = w.handle(changed(radio, ["DisconnectReason": .int32(15), "State": .string("disconnected")]))
        XCTAssertEqual(v, .failed(.attemptsFailed(count: 3, last: .disconnected(reason: 15))))
        XCTAssertEqual(WiFiSetupFailure.attemptsFailed(count: 3, last: .disconnected(reason: 15)).description,
                       "3 attempts failed, the last: disconnected by the other side (DisconnectReason 15: 4-way handshake timeout (wrong passphrase?))")
    }

    func testOwnDisconnectsSuccessCodesAndOtherInterfacesDoNotCount() {
        var w = WiFiSetupWatch(goal: .network, radioPath: radio)
        w.attemptsAllowed = 1
        // This side left the network SelectNetwork replaced (negative: locally generated).
        XCTAssertNil(w.handle(changed(radio, ["DisconnectReason": .int32(-3)])))
        XCTAssertNil(w.handle(changed(radio, ["AuthStatusCode": .int32(0), "AssocStatusCode": .int32(0)])))
        // Another interface of the same wpa_supplicant (NetworkManager's station, say).
        XCTAssertNil(w.handle(changed("/fi/w1/wpa_supplicant1/Interfaces/9", ["DisconnectReason": .int32(2)])))
        XCTAssertNil(w.handle(WPASignal(path: "/fi/w1/wpa_supplicant1/Interfaces/9", interface: WPASupplicantBus.interfaceAPI,
                                        member: "PskMismatch", args: [])))
        XCTAssertNil(w.handle(changed("/fi/w1/wpa_supplicant1/Interfaces/9", ["State": .string("completed")])))
        XCTAssertEqual(w.failedAttempts, 0)
        XCTAssertNil(w.verdict)
    }

    func testARadioDisabledOrSupplicantGoneEndsIt() {
        var a = WiFiSetupWatch(goal: .network, radioPath: radio)
        XCTAssertEqual(a.handle(changed(radio, ["State": .string("interface_disabled")])), .failed(.interfaceDisabled))
        var b = WiFiSetupWatch(goal: .p2pGroup(role: "GO"), radioPath: radio)
        let gone = WPASignal(path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                             args: [.string(WPASupplicantBus.service), .string(":1.4"), .string("")])
        XCTAssertEqual(b.handle(gone), .failed(.supplicantStopped))
    }

    func testAGroupStartsOnlyInTheExpectedRole() {
        var w = WiFiSetupWatch(goal: .p2pGroup(role: "client"), radioPath: radio)
        XCTAssertNil(w.handle(groupStarted(role: "GO")))
        guard case let .groupStarted(g)? = w.handle(groupStarted(role: "client")) else { return XCTFail("no group") }
        XCTAssertEqual(g.interfaceObject, group)
        // A network goal ignores P2P signals.
        var n = WiFiSetupWatch(goal: .network, radioPath: radio)
        XCTAssertNil(n.handle(groupStarted(role: "client")))
        XCTAssertNil(n.handle(p2p("GroupFormationFailure", [.string("x")])))
    }

    func testP2PFailuresEndItAtOnceWithTheirReasons() {
        let cases: [(WPASignal, WiFiSetupFailure, String)] = [
            (p2p("GroupFormationFailure", [.string("FormationFailed")]), .groupFormation("FormationFailed"), "GroupFormationFailure FormationFailed"),
            (p2p("GONegotiationFailure", [.propertyDictionary(["peer_object": .objectPath("/p"), "status": .int32(9)])]), .goNegotiation(status: 9),
             "both want to be group owner"),
            (p2p("InvitationResult", [.propertyDictionary(["status": .int32(8)])]), .invitation(status: 8), "unknown P2P group"),
            (p2p("WpsFailed", [.string("fail"), .propertyDictionary(["msg": .int32(8), "config_error": .uint16(18)])]), .wps(configError: 18),
             "config error 18"),
        ]
        for (signal, failure, words) in cases {
            var w = WiFiSetupWatch(goal: .p2pGroup(role: "client"), radioPath: radio)
            XCTAssertEqual(w.handle(signal), .failed(failure), signal.member)
            XCTAssertTrue(failure.description.contains(words), failure.description)
        }
        // A successful invitation is no failure.
        var ok = WiFiSetupWatch(goal: .p2pGroup(role: "client"), radioPath: radio)
        XCTAssertNil(ok.handle(p2p("InvitationResult", [.propertyDictionary(["status": .int32(0)])])))
    }

    func testAP2PClientsWrongPassphraseIsHeardOnItsNewGroupInterface() {
        var w = WiFiSetupWatch(goal: .p2pGroup(role: "client"), radioPath: radio)
        // Before the group interface appears, its signals are not ours.
        XCTAssertNil(w.handle(WPASignal(path: group, interface: WPASupplicantBus.interfaceAPI, member: "PskMismatch", args: [])))
        XCTAssertNil(w.handle(interfaceAdded("/fi/w1/wpa_supplicant1/Interfaces/3", "p2p-dev-wlan1")))
        XCTAssertNil(w.handle(interfaceAdded(group, "p2p-wlan1-0")))
        XCTAssertEqual(w.groupInterfaces, [group])
        XCTAssertEqual(w.handle(WPASignal(path: group, interface: WPASupplicantBus.interfaceAPI, member: "PskMismatch", args: [])),
                       .failed(.wrongPassphrase(evidence: "PskMismatch")))
    }

    /// wpa_supplicant 2.10 sends a P2P client's GroupFormationFailure from the group
    /// interface it made for the attempt (seen in the lab), not from the radio.
    func testAGroupFormationFailureFromTheNewGroupInterfaceEndsIt() {
        var w = WiFiSetupWatch(goal: .p2pGroup(role: "client"), radioPath: radio)
        let failure = WPASignal(path: group, interface: WPASupplicantBus.p2pAPI, member: "GroupFormationFailure", args: [.string("")])
        XCTAssertNil(w.handle(failure), "not ours before the interface appeared")
        XCTAssertNil(w.handle(interfaceAdded(group, "p2p-wlan1-0")))
        XCTAssertEqual(w.handle(failure), .failed(.groupFormation("")))
    }
}
