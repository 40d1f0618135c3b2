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

    /// Runs the lab script; returns (exit status, combined output). The script runs in its
    /// own process group, killed after `timeout` (status -2). posix_spawn + waitpid rather
    /// than Foundation's Process, whose exit detection waits for every inheritor of its socket.
    @discardableResult
    static func run(_ arguments: [String], environment extra: [String: String] = [:], timeout: TimeInterval = 30) -> (Int32, String) {
        let outputPath = NSTemporaryDirectory() + "iplab-out-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in extra { environment[key] = value }
        let argv = (["/bin/bash", script] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/bash", &actions, &attributes, argv, envp)
        guard spawned == 0 else { return (-1, "cannot run \(script): \(String(cString: strerror(spawned)))") }
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        var timedOut = false
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid || (reaped < 0 && errno != EINTR) { break }
            if Date() >= deadline {
                timedOut = true
                kill(-pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                break
            }
            usleep(20_000)
        }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        if timedOut { return (-2, "timed out after \(timeout) s; output so far: \(text)") }
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), text)
    }

    /// Brings a two-host lab up. Throws XCTSkip when that is impossible here, except under
    /// CI=true where the failure is an error.
    static func up(ipv6: Bool = false) throws -> AvahiIPLab {
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
        let (status, output) = run(["up", dir, "2"], environment: ["IPLAB_PREFIX": prefix, "IPLAB_QUIET": "1", "IPLAB_IPV6": ipv6 ? "yes" : "no"], timeout: 40)
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
