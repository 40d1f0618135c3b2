import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkWiFiDirect

/// `peerlink doctor`'s Wi-Fi section on the lab's radios (`scripts/test-wifi.sh`): ready
/// with wpa_supplicant on the bus, and a clear failure with a fix when it is not. The "no
/// radio" path is tested on the host (WiFiDirectRulesTests, cli-checks.sh). Skipped unless
/// `PEERLINK_LAB=1` and `PEERLINK_LAB_RADIOS` ≥ 2.
final class DoctorWiFiLabTests: XCTestCase {
    func test1ReadyOnARadioWithP2P() async throws {
        let a = try WiFiLabNode.lab(0)
        let r = await DoctorWiFi.report(busAddress: a.bus, interface: a.radio)
        for c in r.checks { labLog("doctor: \(c.ok ? "ok  " : "FAIL") \(c.name): \(c.detail)") }
        XCTAssertTrue(r.usable)
        let p2p = try XCTUnwrap(r.checks.first { $0.name == "\(a.radio) Wi-Fi Direct" })
        XCTAssertTrue(p2p.ok, p2p.detail)
        XCTAssertTrue(p2p.detail.hasPrefix("ready"), p2p.detail)
        XCTAssertFalse(p2p.detail.contains("no interface combinations"), "hwsim reports its combinations: \(p2p.detail)")
        XCTAssertEqual(r.checks.first { $0.name == "wpa_supplicant" }?.ok, true)
        // The kernel as Debian ships it: DAD is waited out, and doctor says how to skip it.
        let dad = try XCTUnwrap(r.checks.first { $0.name == "IPv6 optimistic DAD" })
        XCTAssertTrue(dad.ok, dad.detail)
        XCTAssertTrue(dad.detail.hasPrefix("off"), dad.detail)
        XCTAssertTrue(dad.fix?.contains("net.ipv6.conf.default.optimistic_dad = 1") ?? false, dad.fix ?? "no hint")
        let probe = try await a.wifi.probe(interface: a.radio)
        XCTAssertEqual(probe.kernelInterfaceTypes?.contains("P2P-GO"), true)
        XCTAssertEqual(probe.interfaceCombinations?.count, 1, "\(probe.interfaceCombinations ?? [])")
        XCTAssertEqual(probe.networkManager, .notRunning)
        XCTAssertEqual(try a.supplicantInterfaces(), [], "doctor only looks: it adds no interface")
    }

    /// Node B's wpa_supplicant stopped: not usable, and the fix says how to start it.
    func test2SupplicantNotOnTheBus() async throws {
        let b = try WiFiLabNode.lab(1)
        try labShell("bash Hardware/bt-lab/guest-wifi.sh stop-supplicant 1")
        addTeardownBlock { try labShell("bash Hardware/bt-lab/guest-wifi.sh supplicant 1") }
        let r = await DoctorWiFi.report(busAddress: b.bus, interface: b.radio)
        for c in r.checks { labLog("doctor: \(c.ok ? "ok  " : "FAIL") \(c.name): \(c.detail)\(c.fix.map { " / fix: \($0)" } ?? "")") }
        XCTAssertFalse(r.usable)
        let check = try XCTUnwrap(r.checks.first { $0.name == "wpa_supplicant" })
        XCTAssertFalse(check.ok)
        XCTAssertTrue(check.detail.contains("not running"), check.detail)
        XCTAssertTrue(check.fix?.contains("systemctl start wpa_supplicant") ?? false, "\(check.fix ?? "no fix")")
        do {
            _ = try await b.wifi.formGroup(interface: b.radio)
            XCTFail("formed a group without wpa_supplicant")
        } catch {
            XCTAssertEqual(error as? WiFiError, .supplicantNotRunning)
        }
    }

    /// A user outside root and group netdev: wpa_supplicant's D-Bus policy refuses it, and
    /// doctor says so with the fix (`peerlink doctor` run as nobody).
    func test4UserWithoutPermission() throws {
        let a = try WiFiLabNode.lab(0)
        let bin = peerlinkBinary()
        guard FileManager.default.isExecutableFile(atPath: bin) else { throw XCTSkip("no peerlink binary beside the test bundle (\(bin))") }
        let out = try labShell("cd /tmp && HOME=/tmp PEERLINK_CONFIG_DIR=/tmp/nobody-cfg setpriv --reuid=65534 --regid=65534 --clear-groups -- \(bin) doctor --json --wifi \(a.radio); true")
        let start = try XCTUnwrap(out.firstIndex(of: "["), out)
        let media = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(out[start...].utf8)) as? [[String: Any]], out)
        let wifi = try XCTUnwrap(media.first { $0["medium"] as? String == "wifi-direct" }, out)
        let checks = try XCTUnwrap(wifi["checks"] as? [[String: Any]])
        let supplicant = try XCTUnwrap(checks.first { $0["name"] as? String == "wpa_supplicant" }, "\(checks)")
        labLog("doctor as nobody: \(supplicant)")
        XCTAssertEqual(wifi["usable"] as? Bool, false)
        XCTAssertEqual(supplicant["ok"] as? Bool, false)
        XCTAssertTrue((supplicant["detail"] as? String ?? "").contains("refuses this user"), "\(supplicant)")
        XCTAssertTrue((supplicant["fix"] as? String ?? "").contains("netdev"), "\(supplicant)")
    }

    /// The same user with group netdev as its only group, as the Pi's install makes the
    /// service user (Hardware/pi/README.md): wpa_supplicant's policy lets it in, Wi-Fi Direct
    /// is usable, and its upgrades can be formed.
    func test5ServiceUserInGroupNetdev() throws {
        let a = try WiFiLabNode.lab(0)
        let bin = peerlinkBinary()
        guard FileManager.default.isExecutableFile(atPath: bin) else { throw XCTSkip("no peerlink binary beside the test bundle (\(bin))") }
        guard (try? labShell("getent group netdev")) != nil else { throw XCTSkip("no group netdev on this machine") }
        let out = try labShell("cd /tmp && HOME=/tmp PEERLINK_CONFIG_DIR=/tmp/netdev-cfg setpriv --reuid=65534 --regid=65534 --groups=netdev -- \(bin) doctor --json --wifi \(a.radio); true")
        let start = try XCTUnwrap(out.firstIndex(of: "["), out)
        let media = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(out[start...].utf8)) as? [[String: Any]], out)
        let wifi = try XCTUnwrap(media.first { $0["medium"] as? String == "wifi-direct" }, out)
        let checks = try XCTUnwrap(wifi["checks"] as? [[String: Any]])
        for c in checks { labLog("doctor as nobody in netdev: \(c["name"] ?? "?"): \(c["detail"] ?? "")") }
        XCTAssertEqual(wifi["usable"] as? Bool, true, "\(checks)")
        XCTAssertEqual(checks.first { $0["name"] as? String == "wpa_supplicant" }?["ok"] as? Bool, true, "\(checks)")
        XCTAssertEqual(checks.first { $0["name"] as? String == "\(a.radio) Wi-Fi Direct" }?["ok"] as? Bool, true, "\(checks)")
    }

    /// The helper itself, on any machine: output, exit status, a background child that
    /// keeps running does not hold it up.
    func test0LabShellHelper() throws {
        XCTAssertEqual(try labShell("echo out; echo err >&2"), "out\nerr\n")
        XCTAssertThrowsError(try labShell("echo nope; exit 3")) { e in
            XCTAssertEqual((e as? LabShellFailure)?.status, 3)
            XCTAssertEqual((e as? LabShellFailure)?.output, "nope\n")
        }
        let start = Date()
        try labShell("sleep 5 >/dev/null 2>&1 &")
        XCTAssertLessThan(Date().timeIntervalSince(start), 3)
    }

    /// The CLI: `peerlink doctor --wifi wlan0` on the VM's system bus (node A's).
    func test3CommandLine() async throws {
        let a = try WiFiLabNode.lab(0)
        let bin = peerlinkBinary()
        guard FileManager.default.isExecutableFile(atPath: bin) else { throw XCTSkip("no peerlink binary beside the test bundle (\(bin))") }
        let out = try labShell("\(bin) doctor --wifi \(a.radio) 2>&1; true")
        labLog("peerlink doctor:\n\(out)")
        XCTAssertTrue(out.contains("wifi-direct: usable"), out)
        XCTAssertTrue(out.contains("ok   \(a.radio) Wi-Fi Direct: ready"), out)
    }
}

/// Runs `command` with `sh -c` and returns its output; throws when it exits non-zero.
/// posix_spawn with an empty signal mask and waitpid, not Foundation's Process: a child
/// started from a Swift concurrency thread inherits that thread's blocked signals (a
/// wpa_supplicant it starts would ignore SIGTERM), and `waitUntilExit` hung here in the lab.
/// The output goes through a file: a daemon started in the background would hold a pipe open.
/// A command still running after `timeout` seconds is killed with its process group, and
/// the failure says so.
@discardableResult
func labShell(_ command: String, timeout: Double = 120) throws -> String {
    let out = FileManager.default.temporaryDirectory.appendingPathComponent("peerlink-lab-shell-\(UUID().uuidString.prefix(8))")
    defer { try? FileManager.default.removeItem(at: out) }
    let args: [String] = ["/bin/sh", "-c", "exec >\"$0\" 2>&1 </dev/null; \(command)", out.path]
    let argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
    defer { for a in argv { free(a) } }
    var attr = posix_spawnattr_t()
    posix_spawnattr_init(&attr)
    defer { posix_spawnattr_destroy(&attr) }
    var none = sigset_t(), all = sigset_t()
    sigemptyset(&none)
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attr, &none)
    posix_spawnattr_setsigdefault(&attr, &all)
    posix_spawnattr_setpgroup(&attr, 0)
    posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, "/bin/sh", nil, &attr, argv, environ)
    guard rc == 0 else { throw LabShellFailure(command: command, status: -1, output: "posix_spawn failed: \(String(cString: strerror(rc)))") }
    var status: Int32 = 0
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid || (r < 0 && errno != EINTR) { break }
        if Date() >= deadline {
            kill(-pid, SIGKILL)
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
            throw LabShellFailure(command: command, status: -1, output: "still running after \(Int(timeout)) s, killed; output so far: \(text)")
        }
        usleep(20_000)
    }
    let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
    let exited = status & 0x7f == 0, code = (status >> 8) & 0xff
    guard exited, code == 0 else { throw LabShellFailure(command: command, status: exited ? code : -1, output: text) }
    return text
}

struct LabShellFailure: Error, CustomStringConvertible {
    var command: String
    var status: Int32
    var output: String
    var description: String { "`\(command)` exited \(status): \(output)" }
}

/// The `peerlink` binary built beside the test bundle (`PEERLINK_BIN` overrides).
func peerlinkBinary() -> String {
    if let p = ProcessInfo.processInfo.environment["PEERLINK_BIN"] { return p }
    return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("peerlink").path
}
