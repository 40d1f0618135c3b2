import Foundation
import XCTest

/// `peerlink-harness run --backend memory --seed N` as a user runs it: the same seed gives
/// the same reports, byte for byte, and another seed another run.
final class HarnessReplayTests: XCTestCase {
    private var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    private var harness: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("peerlink-harness").path
    }

    /// Runs the harness on `scenarios` with `seed`; returns the report files' contents by name.
    private func run(seed: UInt64, _ scenarios: [String]) throws -> [String: Data] {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: harness)
        p.arguments = ["run", "--seed", "\(seed)", "--out", out.path] + scenarios.map { repository.appendingPathComponent($0).path }
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        let deadline = Date().addingTimeInterval(120)
        while p.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if p.isRunning { p.terminate(); XCTFail("peerlink-harness did not finish within 120 s") }
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "peerlink-harness failed on \(scenarios) with seed \(seed)")
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: out.path) {
            files[name] = try Data(contentsOf: out.appendingPathComponent(name))
        }
        return files
    }

    func testTheSameSeedReplaysByteForByte() throws {
        guard FileManager.default.isExecutableFile(atPath: harness) else {
            return XCTFail("no peerlink-harness beside the test bundle (\(harness)): swift build --build-tests builds it")
        }
        let scenarios = ["scenarios/loss-5pct-preferred.toml", "scenarios/upgrade/group-torn-down-mid-transfer.toml"]
        let first = try run(seed: 5, scenarios)
        XCTAssertEqual(Set(first.keys), ["loss-5pct-preferred.json", "loss-5pct-preferred.svg",
                                         "group-torn-down-mid-transfer.json", "group-torn-down-mid-transfer.svg"])
        let again = try run(seed: 5, scenarios)
        for (name, bytes) in first {
            XCTAssertEqual(again[name], bytes, "\(name) differs between two runs of seed 5")
        }
        let other = try run(seed: 6, scenarios)
        XCTAssertNotEqual(other["loss-5pct-preferred.json"], first["loss-5pct-preferred.json"],
                          "seed 6 ran exactly as seed 5: the seed is not used")
    }

    /// Field daemons too (SQLite ledgers, folders, their timers): the same seed, the same reports.
    func testDaemonScenariosReplayByteForByte() throws {
        guard FileManager.default.isExecutableFile(atPath: harness) else {
            return XCTFail("no peerlink-harness beside the test bundle (\(harness)): swift build --build-tests builds it")
        }
        let scenarios = ["scenarios/daemons/laptop-collects-from-three-nodes.toml", "scenarios/daemons/late-peer-and-expiry.toml"]
        let first = try run(seed: 5, scenarios)
        XCTAssertEqual(Set(first.keys), ["laptop-collects-from-three-nodes.json", "laptop-collects-from-three-nodes.svg",
                                         "late-peer-and-expiry.json", "late-peer-and-expiry.svg"])
        let again = try run(seed: 5, scenarios)
        for (name, bytes) in first {
            XCTAssertEqual(again[name], bytes, "\(name) differs between two runs of seed 5")
        }
        let other = try run(seed: 6, scenarios)
        XCTAssertNotEqual(other["late-peer-and-expiry.json"], first["late-peer-and-expiry.json"],
                          "seed 6 ran exactly as seed 5: the seed is not used")
    }
}
