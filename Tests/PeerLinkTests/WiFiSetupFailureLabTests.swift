import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkWiFiDirect

/// Set-ups that fail for real, in the Wi-Fi lab VM (`scripts/test-wifi.sh`): B joins A's
/// soft-AP, then A's Wi-Fi Direct group, with a wrong passphrase. wpa_supplicant says so on
/// D-Bus (2.10: `DisconnectReason` during `4way_handshake`, then `GroupFormationFailure` for
/// a P2P client; later versions also `PskMismatch`); the join must end then, with that reason,
/// well before the 30 s set-up timeout (before WiFiSetupWatch it ended only at the timeout),
/// leave B's wpa_supplicant as it found it, and leave A's group up. Skipped outside the lab.
final class WiFiSetupFailureLabTests: XCTestCase {
    /// The set-up timeout these joins run under (the API's default).
    let timeout = Duration.seconds(30)


    /// Joins with `credentials` but a passphrase of the same length that is wrong; returns the
    /// error and the seconds it took.
    func joinWithWrongPassphrase(_ b: WiFiLabNode, _ credentials: WiFiCredentials, method: WiFiJoinMethod) async -> (Error?, Double) {
        var wrong = credentials
        wrong.passphrase = String(credentials.passphrase.reversed()) == credentials.passphrase
            ? String(repeating: "x", count: credentials.passphrase.count) : String(credentials.passphrase.reversed())
        let t = Date()
        do {
            let g = try await b.wifi.joinGroup(interface: b.radio, credentials: wrong, method: method, timeout: timeout)
            await b.wifi.leave(g)
            return (nil, Date().timeIntervalSince(t))
        } catch {
            return (error, Date().timeIntervalSince(t))
        }
    }

    /// B's wpa_supplicant has nothing of the attempt left (no interface PeerLink added, no group).
    func assertBLeftAsFound(_ b: WiFiLabNode, file: StaticString = #filePath, line: UInt = #line) async throws {
        let clean = await waitUntil(timeout: 10) {
            ((try? b.supplicantInterfaces()) ?? ["?"]).isEmpty
                && ((try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/net")) ?? []).allSatisfy { !$0.hasPrefix("p2p-\(b.radio)") }
        }
        XCTAssertTrue(clean, "B's wpa_supplicant still has \((try? b.supplicantInterfaces()) ?? [])", file: file, line: line)
    }

    func test1ASoftAPJoinWithAWrongPassphraseFailsEarlyWithTheReason() async throws {
        let (a, b) = try labNodes()
        let ap = try await a.wifi.startSoftAP(interface: a.radio, frequency: 2437)
        let (error, took) = await joinWithWrongPassphrase(b, ap.credentials, method: .station)
        wifiFigure(String(format: "soft-AP join with a wrong passphrase failed after %.2f s (set-up timeout 30 s): %@", took, "\(error.map { "\($0)" } ?? "joined!")"))
        guard case let WiFiError.setupFailed(step, .wrongPassphrase(evidence))? = error else {
            return XCTFail("not a wrong passphrase wpa_supplicant reported: \(error.map { "\($0)" } ?? "joined")")
        }
        XCTAssertEqual(step, WiFiStep.connect.rawValue)
        // wpa_supplicant 2.10 (Debian 12) has no PskMismatch signal; later ones send it.
        XCTAssertTrue(evidence == "PskMismatch" || evidence.hasPrefix("the 4-way handshake failed: DisconnectReason"), evidence)
        XCTAssertTrue("\(error.map { "\($0)" } ?? "")".hasPrefix("Wi-Fi step 'connect' failed: wrong passphrase ("))
        XCTAssertLessThan(took, 15, "the failure ends the join, not the 30 s timeout")
        XCTAssertTrue(a.wifi.isActive(ap), "A's access point stays up")
        try await assertBLeftAsFound(b)
        // The right passphrase still joins after the failed attempt.
        let station = try await b.wifi.joinGroup(interface: b.radio, credentials: ap.credentials, method: .station)
        await b.wifi.leave(station)
        await a.wifi.leave(ap)
    }

    func test2AP2PClientWithAWrongPassphraseFailsEarlyWithTheReason() async throws {
        let (a, b) = try labNodes()
        let owner = try await a.wifi.formGroup(interface: a.radio)
        let (error, took) = await joinWithWrongPassphrase(b, owner.credentials, method: .p2pClient)
        wifiFigure(String(format: "P2P client join with a wrong passphrase failed after %.2f s (set-up timeout 30 s): %@", took, "\(error.map { "\($0)" } ?? "joined!")"))
        guard case let WiFiError.setupFailed(step, why)? = error else {
            return XCTFail("not a failure wpa_supplicant reported: \(error.map { "\($0)" } ?? "joined")")
        }
        XCTAssertEqual(step, WiFiStep.joinGroup.rawValue)
        switch why {
        case .wrongPassphrase, .groupFormation: break
        default: XCTFail("reason: \(why)")
        }
        XCTAssertLessThan(took, 20, "the failure ends the join, not the 30 s timeout")
        XCTAssertTrue(FileManager.default.fileExists(atPath: "/sys/class/net/\(owner.interface)"), "A's group stays up")
        try await assertBLeftAsFound(b)
        await a.wifi.leave(owner)
    }
}
