import Foundation
import XCTest
@testable import PeerLink

/// Collects the events of an AsyncStream so tests can wait for one with a deadline.
final class AvahiEventLog<E: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [(date: Date, event: E)] = []
    private var task: Task<Void, Never>?

    init(_ stream: AsyncStream<E>) {
        task = nil
        task = Task { [weak self] in
            for await event in stream {
                guard let self else { return }
                self.lock.withLock { self.items.append((Date(), event)) }
            }
        }
    }

    deinit { task?.cancel() }

    var count: Int { lock.withLock { items.count } }
    var all: [E] { lock.withLock { items.map(\.event) } }

    /// Waits until an event at position >= `from` satisfies `match`.
    func wait(from start: Int = 0, timeout: TimeInterval, _ match: (E) -> Bool) async -> (index: Int, date: Date, event: E)? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            let hit: (Int, Date, E)? = lock.withLock {
                guard start < items.count else { return nil }
                for index in start..<items.count where match(items[index].event) {
                    return (index, items[index].date, items[index].event)
                }
                return nil
            }
            if let hit { return (hit.0, hit.1, hit.2) }
            try? await Task.sleep(nanoseconds: 20_000_000)
        } while Date() < deadline
        return nil
    }
}

/// Drives scripts/lab/iplab.sh: two hosts (namespaces) with their own D-Bus and avahi-daemon.
struct AvahiIPLab {
    struct StartFailure: Error, CustomStringConvertible { var description: String }

    let dir: String
    let hosts: [String]
    let upSeconds: Double

    static var script: String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/lab/iplab.sh").path
    }

    /// Runs the lab script; returns (exit status, combined output). Kills it after `timeout`.
    @discardableResult
    static func run(_ arguments: [String], environment extra: [String: String] = [:], timeout: TimeInterval = 30) -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script] + arguments
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        let outputPath = NSTemporaryDirectory() + "iplab-out-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        guard let output = FileHandle(forWritingAtPath: outputPath) else { return (-1, "cannot create \(outputPath)") }
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return (-1, "cannot run \(script): \(error)") }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        var timedOut = false
        if process.isRunning {
            timedOut = true
            process.terminate()
            usleep(500_000)
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        try? output.close()
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return (timedOut ? -2 : process.terminationStatus, timedOut ? "timed out after \(timeout)s; " + text : text)
    }

    /// Brings a two-host lab up. Throws XCTSkip when that is impossible here, except under
    /// CI=true where the failure is an error.
    static func up() throws -> AvahiIPLab {
        let ci = ProcessInfo.processInfo.environment["CI"] == "true"
        func unavailable(_ why: String) -> Error {
            ci ? StartFailure(description: "IP lab unavailable under CI=true: \(why)") : XCTSkip("IP lab unavailable: \(why)")
        }
        guard geteuid() == 0 else { throw unavailable("needs root (network namespaces)") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/avahi-daemon") else {
            throw unavailable("avahi-daemon is not installed (apt-get install avahi-daemon dbus iproute2)")
        }
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        let prefix = "pv" + String((0..<3).map { _ in letters.randomElement() ?? "x" })
        let dir = NSTemporaryDirectory() + "peerlink-avahi-lab-\(prefix)"
        let started = Date()
        let (status, output) = run(["up", dir, "2"], environment: ["IPLAB_PREFIX": prefix, "IPLAB_QUIET": "1"], timeout: 40)
        guard status == 0 else {
            run(["down", dir], timeout: 20)
            throw unavailable("`iplab.sh up` failed (\(status)): \(output)")
        }
        return AvahiIPLab(dir: dir, hosts: [prefix + "a", prefix + "b"], upSeconds: Date().timeIntervalSince(started))
    }

    func down() {
        AvahiIPLab.run(["down", dir], timeout: 20)
        try? FileManager.default.removeItem(atPath: dir)
    }

    func bus(_ host: String) -> String { "unix:path=\(dir)/\(host)/bus.sock" }

    func address(_ host: String) -> String {
        ((try? String(contentsOfFile: "\(dir)/\(host)/addr", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
