import Crypto
import Foundation
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth

/// Two field daemons with nothing but Bluetooth between them, run as a Pi runs them
/// (`peerlink daemon --config FILE`): an item dropped in one's outbox arrives in the other's
/// inbox, and again after bluetoothd restarts, after the receiver's adapter is powered off
/// and on, and after it is unplugged and plugged in again — the daemons are not restarted.
/// Each item arrives once, intact.
///
/// Lab only (`PEERLINK_LAB=1`), in the repeat boot (hci0 → hci1; hci0 → hci3, the controller the
/// lab's btvirt can unplug; `scripts/test-bt.sh --repeat`).
/// Every wait is bounded and a failure ends with both daemons' logs.
final class FieldDaemonBluetoothLabTests: XCTestCase {
    var env: [String: String] { ProcessInfo.processInfo.environment }
    var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("peerlink").path
    }

    override func setUpWithError() throws {
        guard env["PEERLINK_LAB"] == "1" else { throw XCTSkip("Bluetooth lab only: run scripts/test-bt.sh --repeat") }
        guard env["PEERLINK_LAB_HCI1"] != nil else { throw XCTSkip("needs controllers hci0 and hci1") }
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: binary), "no peerlink binary at \(binary)")
    }

    /// A daemon's files: configuration, key, state, inbox, outbox and API socket directory.
    struct Node {
        let name: String, root: String, adapter: String
        var config: String { root + "/daemon.toml" }
        var configDir: String { root + "/cfg" }
        var inbox: String { root + "/inbox" }
        var outbox: String { root + "/outbox" }
        var log: String { root + "/daemon.log" }

        func write() throws {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try """
                service = "sfbt"
                name = "\(name)"
                media = ["bluetooth"]
                adapter = "\(adapter)"
                bluetooth_transports = ["rfcomm"]
                accept = "all"
                keep_free = "1M"
                inbox = "\(inbox)"
                outbox = "\(outbox)"
                state_dir = "\(root)/state"
                runtime_dir = "\(root)/run"
                log_level = "debug"

                """.write(toFile: config, atomically: true, encoding: .utf8)
        }
    }

    func testItemsArriveOnceThroughABluetoothdRestartAndAnAdapterPowerCycle() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-sfbt-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let holder = Node(name: "holder", root: dir + "/holder", adapter: "hci0")
        let hub = Node(name: "hub", root: dir + "/hub", adapter: "hci1")
        for n in [holder, hub] { try n.write() }
        let hubID = try peerID(of: hub)

        let hubProcess = LabProcess(binary, ["daemon", "--config", hub.config, "--config-dir", hub.configDir])
        let holderProcess = LabProcess(binary, ["daemon", "--config", holder.config, "--config-dir", holder.configDir])
        defer { holderProcess.stop(); hubProcess.stop() }
        try hubProcess.start()
        try holderProcess.start()
        for (p, what) in [(hubProcess, "hub"), (holderProcess, "holder")] {
            XCTAssertTrue(p.waitForLine(containing: "running", seconds: 60), "the \(what) daemon runs:\n\(tail(p.output))\n\(p.fate)")
        }

        var rng = seededGenerator(self)  // the seed is printed; PEERLINK_TEST_SEED repeats it
        func deliver(_ name: String, _ when: String) throws {
            try self.deliver(name, when, from: (holder, holderProcess), to: (hub, hubProcess), hubID: hubID, rng: &rng)
        }

        try deliver("first.bin", "both daemons fresh")
        try restartLabBluetoothd()
        try deliver("second.bin", "after a bluetoothd restart")
        try labBtmgmt(index: 1, ["power", "off"])
        Thread.sleep(forTimeInterval: 3)
        try labBtmgmt(index: 1, ["power", "on"])
        try deliver("third.bin", "after the hub's adapter was powered off and on")

        let inbox = ((try? FileManager.default.contentsOfDirectory(atPath: hub.inbox)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        XCTAssertEqual(inbox, ["first.bin", "second.bin", "third.bin"], "each item once, nothing else")
        XCTAssertEqual(hubProcess.output.components(separatedBy: "item received").count - 1, 3, "three receptions at the hub")
        for (p, what) in [(hubProcess, "hub"), (holderProcess, "holder")] {
            XCTAssertEqual(p.output.components(separatedBy: "info running").count - 1, 1, "the \(what) daemon was never restarted")
        }
    }

    /// The receiver's adapter is pulled out (the lab's btvirt drops its last controller on
    /// SIGUSR2: Hardware/bt-lab/btvirt-replug.patch) and plugged in again 3 s later. Neither
    /// daemon restarts; the next item arrives once, intact.
    func testAnItemArrivesAfterTheReceiversAdapterIsUnpluggedAndPluggedIn() throws {
        let last = (Int(env["PEERLINK_LAB_CONTROLLERS"] ?? "") ?? 2) - 1
        guard last >= 1 else { throw XCTSkip("needs two controllers") }
        guard let text = try? String(contentsOfFile: "/run/bt-lab/btvirt.pid", encoding: .utf8),
              let btvirt = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw XCTSkip("no /run/bt-lab/btvirt.pid: not the lab's btvirt")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-sfbt-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The receiver on the set's last controller: the one the lab's btvirt can unplug.
        let holder = Node(name: "holder", root: dir + "/holder", adapter: "hci0")
        let hub = Node(name: "hub", root: dir + "/hub", adapter: "hci\(last)")
        for n in [holder, hub] { try n.write() }
        let hubID = try peerID(of: hub)
        let hubProcess = LabProcess(binary, ["daemon", "--config", hub.config, "--config-dir", hub.configDir])
        let holderProcess = LabProcess(binary, ["daemon", "--config", holder.config, "--config-dir", holder.configDir])
        defer { holderProcess.stop(); hubProcess.stop() }
        try hubProcess.start()
        try holderProcess.start()
        for (p, what) in [(hubProcess, "hub"), (holderProcess, "holder")] {
            XCTAssertTrue(p.waitForLine(containing: "running", seconds: 60), "the \(what) daemon runs:\n\(tail(p.output))\n\(p.fate)")
        }
        var rng = seededGenerator(self)  // the seed is printed; PEERLINK_TEST_SEED repeats it
        func deliver(_ name: String, _ when: String) throws {
            try self.deliver(name, when, from: (holder, holderProcess), to: (hub, hubProcess), hubID: hubID, rng: &rng)
        }
        try deliver("before.bin", "both daemons fresh")

        func adapter() -> BlueZAdapter? { (try? BlueZProbe.adapters())?.first { $0.name == hub.adapter } }
        let address = adapter()?.address
        kill(btvirt, SIGUSR2)
        guard waitUntil(seconds: 20, { adapter() == nil }) else {
            XCTFail("\(hub.adapter) still on D-Bus 20 s after SIGUSR2 to btvirt (the lab's btvirt without btvirt-replug.patch? run scripts/setup-bt-lab.sh)")
            throw XCTSkip("stopping after the failure above")
        }
        labLog("\(hub.adapter) unplugged")
        Thread.sleep(forTimeInterval: 3)
        kill(btvirt, SIGUSR2)
        XCTAssertTrue(waitUntil(seconds: 30, { adapter()?.powered == true }),
                      "\(hub.adapter) back on D-Bus and powered within 30 s (adapters: \((try? BlueZProbe.adapters().map(\.name)) ?? []))")
        XCTAssertEqual(adapter()?.address, address, "the same controller came back")
        labLog("\(hub.adapter) plugged in again")
        try deliver("after.bin", "after the hub's adapter was unplugged and plugged in again")

        let inbox = ((try? FileManager.default.contentsOfDirectory(atPath: hub.inbox)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        XCTAssertEqual(inbox, ["after.bin", "before.bin"], "each item once, nothing else")
        XCTAssertEqual(hubProcess.output.components(separatedBy: "item received").count - 1, 2, "two receptions at the hub")
        for (p, what) in [(hubProcess, "hub"), (holderProcess, "holder")] {
            XCTAssertEqual(p.output.components(separatedBy: "info running").count - 1, 1, "the \(what) daemon was never restarted")
        }
    }

    /// Drops a 48 KiB file for the hub in the holder's outbox; waits until it is in the hub's
    /// inbox, intact, and settled at the holder.
    func deliver(_ name: String, _ when: String, from holder: (node: Node, process: LabProcess), to hub: (node: Node, process: LabProcess),
                 hubID: String, rng: inout SplitMix64) throws {
        let bytes = Data((0..<(48 * 1024)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        let folder = holder.node.outbox + "/" + hubID
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try bytes.write(to: URL(fileURLWithPath: folder + "/.\(name).part"))
        try FileManager.default.moveItem(atPath: folder + "/.\(name).part", toPath: folder + "/" + name)
        let t0 = Date()
        let path = hub.node.inbox + "/" + name
        guard waitUntil(seconds: 120, { FileManager.default.fileExists(atPath: path) }) else {
            XCTFail("\(name) (\(when)) did not reach the hub's inbox within 120 s.\nholder:\n\(tail(holder.process.output, lines: 25))\nhub:\n\(tail(hub.process.output, lines: 25))")
            throw XCTSkip("stopping after the failure above")
        }
        let got = FileManager.default.contents(atPath: path) ?? Data()
        XCTAssertEqual(Array(SHA256.hash(data: got)), Array(SHA256.hash(data: bytes)), "\(name) (\(when)) intact")
        XCTAssertTrue(waitUntil(seconds: 30) { holder.process.output.contains("delivered") && !FileManager.default.fileExists(atPath: folder + "/" + name) },
                      "\(name) (\(when)) settled at the holder (moved out of its outbox)")
        labLog(String(format: "daemons over Bluetooth: %@ (%@) arrived after %.1f s", name, when, Date().timeIntervalSince(t0)))
    }

    func peerID(of node: Node) throws -> String {
        let p = LabProcess(binary, ["id", "--json", "--config-dir", node.configDir])
        try p.start()
        _ = p.wait(seconds: 20)
        guard let id = p.output.split(separator: "\"").drop(while: { $0 != "peer" }).dropFirst(2).first else {
            throw XCTSkip("no peer ID from peerlink id: \(p.output)")
        }
        return String(id)
    }

    func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.25)
        }
        return condition()
    }

    func tail(_ text: String, lines: Int = 12) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}
