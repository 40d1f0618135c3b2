import PeerLink
import XCTest
@testable import PeerLinkDaemon

/// `peerlink daemon`'s configuration file: defaults, every key read, values refused with the
/// key, the line and what is allowed.
final class DaemonConfigTests: XCTestCase {
    func testAnEmptyFileGivesTheDocumentedDefaults() throws {
        let c = try DaemonConfig.parse("", file: "d.toml", baseDirectory: "/etc/peerlink")
        XCTAssertEqual(c, DaemonConfig())
        XCTAssertEqual(c.inbox, "/var/lib/peerlink/inbox")
        XCTAssertEqual(c.accept, .known)
        XCTAssertEqual(c.keepFree, 64 << 20)
        XCTAssertEqual(c.ttlSeconds, 7 * 86400)
        XCTAssertNil(c.metrics)
        XCTAssertNil(c.runtimeDirectory)
    }

    func testTheRuntimeDirectoryRule() {
        XCTAssertEqual(DaemonPaths.runtimeDirectory(configured: "/srv/run", environment: ["PEERLINK_RUNTIME_DIR": "/e"], uid: 0), "/srv/run")
        XCTAssertEqual(DaemonPaths.runtimeDirectory(environment: ["PEERLINK_RUNTIME_DIR": "/e", "XDG_RUNTIME_DIR": "/x"], uid: 1000), "/e")
        XCTAssertEqual(DaemonPaths.runtimeDirectory(environment: ["XDG_RUNTIME_DIR": "/run/user/0"], uid: 0), "/run/peerlink")
        XCTAssertEqual(DaemonPaths.runtimeDirectory(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], uid: 1000), "/run/user/1000/peerlink")
        XCTAssertEqual(DaemonPaths.runtimeDirectory(environment: [:], uid: 1000), "/tmp/peerlink-1000")
        XCTAssertEqual(DaemonPaths.socket(in: "/run/peerlink"), "/run/peerlink/daemon.sock")
    }

    func testEveryKeyIsRead() throws {
        let c = try DaemonConfig.parse("""
        service = "field"
        name = "pi-north"
        media = ["bluetooth", "wifi-direct"]
        policy = "wifi-first"
        adapter = "hci1"
        bluetooth_transports = ["le"]
        wifi = "wlan1"
        state_dir = "state"
        outbox = "/srv/out"
        accept = "all"
        keep_free = "1G"
        quota = 1048576
        ttl = "1d12h"
        on_receive = "logger got $PEERLINK_FILE"
        log_level = "debug"
        metrics = "0.0.0.0:9100"
        runtime_dir = "run"
        """, file: "d.toml", baseDirectory: "/etc/peerlink")
        XCTAssertEqual(c.service, "field")
        XCTAssertEqual(c.name, "pi-north")
        XCTAssertEqual(c.media, ["bluetooth", "wifi-direct"])
        XCTAssertEqual(c.policy, .wifiFirst)
        XCTAssertEqual(c.adapter, "hci1")
        XCTAssertEqual(c.bluetoothTransports, ["le"])
        XCTAssertEqual(c.wifi, "wlan1")
        XCTAssertEqual(c.stateDirectory, "/etc/peerlink/state", "relative to the file")
        XCTAssertEqual(c.inbox, "/etc/peerlink/state/inbox", "under the state directory by default")
        XCTAssertEqual(c.outbox, "/srv/out")
        XCTAssertEqual(c.accept, .all)
        XCTAssertEqual(c.keepFree, 1 << 30)
        XCTAssertEqual(c.quota, 1 << 20)
        XCTAssertEqual(c.ttlSeconds, 36 * 3600)
        XCTAssertEqual(c.onReceive, ["/bin/sh", "-c", "logger got $PEERLINK_FILE"])
        XCTAssertEqual(c.logLevel, "debug")
        XCTAssertEqual(c.metrics, "0.0.0.0:9100")
        XCTAssertEqual(c.runtimeDirectory, "/etc/peerlink/run", "relative to the file")
        XCTAssertEqual(c.entries.map(\.key), ["service", "name", "media", "policy", "adapter", "bluetooth_transports", "wifi",
                                              "state_dir", "inbox", "outbox", "accept", "keep_free", "quota", "ttl",
                                              "on_receive", "log_level", "metrics", "runtime_dir"])
        XCTAssertTrue(c.entries.contains { $0 == ("ttl", "\"1d12h\"") })
        XCTAssertTrue(c.entries.contains { $0 == ("quota", "\"1M\"") })
    }

    func testBadValuesNameTheKeyTheLineAndWhatIsAllowed() {
        let cases: [(String, Int?, String)] = [
            ("\naccept = \"maybe\"", 2, "accept = \"maybe\" is not allowed; use one of: known, all, none"),
            ("acept = \"all\"", 1, "unknown key acept (docs/CONFIG.md lists the keys)"),
            ("service = \"Field_Nodes\"", 1, "service = \"Field_Nodes\""),
            ("media = \"bluetooth,zigbee\"", 1, "\"zigbee\" is not a medium; use one of: auto, ip, bluetooth, wifi-direct, all"),
            ("policy = \"fastest\"", 1, "use one of: bluetooth-first, wifi-first, lowest-latency, bluetooth-only, ip-only"),
            ("keep_free = \"lots\"", 1, "keep_free = \"lots\" is not a size"),
            ("keep_free = -5", 1, "keep_free = -5 is outside"),
            ("quota = 0", 1, "quota must be more than 0 bytes"),
            ("ttl = \"forever\"", 1, "ttl = \"forever\" is not a duration"),
            ("ttl = 0", 1, "ttl must be at least 1s"),
            ("ttl = true", 1, "ttl must be a duration"),
            ("log_level = \"loud\"", 1, "use one of: trace, debug, info, notice, warning, error, critical"),
            ("metrics = \"9100\"", 1, "is not host:port"),
            ("metrics = \"::1:9100\"", 1, "is not host:port"),
            ("metrics = \"127.0.0.1:0\"", 1, "is not host:port"),
            ("on_receive = [\"logger\", \"x\"]", 1, "first item must be an absolute path"),
            ("bluetooth_transports = [\"rfcomm\", \"rfcomm\"]", 1, "each transport once"),
            ("inbox = \"/x\"\noutbox = \"/x\"", 2, "inbox and outbox must be different"),
            ("name = 3", 1, "name must be a string, not a integer"),
            ("x = = 1", 1, "parsing"),
            ("runtime_dir = \"\"", 1, "runtime_dir is empty"),
            ("runtime_dir = 5", 1, "runtime_dir must be a string"),
            ("\nruntime_dir = \"/\(String(repeating: "r", count: 100))\"", 2, "a Unix socket's path is at most 107"),
        ]
        for (text, line, message) in cases {
            XCTAssertThrowsError(try DaemonConfig.parse(text, file: "field.toml", baseDirectory: "/"), text) { e in
                guard let e = e as? DaemonConfigError else { return XCTFail("\(e)") }
                XCTAssertEqual(e.line, line, "\(text): \(e)")
                XCTAssertTrue(e.description.hasPrefix("field.toml:\(line ?? 0): "), "\(e)")
                XCTAssertTrue(e.message.contains(message), "expected '\(message)' in '\(e.message)'")
            }
        }
    }

    func testAMissingFileSaysSo() {
        XCTAssertThrowsError(try DaemonConfig.load(path: "/nonexistent/peerlink.toml")) { e in
            XCTAssertTrue("\(e)".contains("/nonexistent/peerlink.toml: cannot read the configuration"), "\(e)")
        }
    }

    func testSizesAndDurationsReadBackFromTheirText() {
        for n: UInt64 in [0, 1, 1023, 1024, 64 << 20, 3 << 30, 5 << 40, 1_000_000] {
            XCTAssertEqual(ConfigValues.bytes(ConfigValues.bytesText(n)), n)
        }
        for s in [0, 1, 59, 60, 3600, 86400, 90061, 7 * 86400] {
            XCTAssertEqual(ConfigValues.seconds(ConfigValues.durationText(s)), s)
        }
        XCTAssertEqual(ConfigValues.seconds("2w"), 14 * 86400)
        XCTAssertNil(ConfigValues.seconds("5"), "a unit is needed in text")
        XCTAssertNil(ConfigValues.seconds("d"))
        XCTAssertNil(ConfigValues.seconds("99999999999999999999d"))
        XCTAssertNil(ConfigValues.bytes("١٢M"), "ASCII digits only")
        XCTAssertNil(ConfigValues.bytes("99999999999T"))
    }
}
