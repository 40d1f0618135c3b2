import ArgumentParser
import Foundation
import PeerLinkHarness

@main
struct HarnessCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peerlink-harness",
        abstract: "Run transport-selection scenarios and check which link carries what, over time.",
        discussion: """
        A scenario file (TOML, see docs/HARNESS.md and scenarios/) names the links between two \
        nodes (Bluetooth or Wi-Fi, bandwidth, delay, loss), a timeline of events (cut, off, \
        restore, loss bursts, links appearing), traffic, and what must hold: which link carries \
        each role at given times, exactly-once in-order delivery, the largest delivery gap, \
        verified resources. Exit status: 0 when every scenario passed, 1 when one failed, \
        2 for an unusable file.
        """,
        subcommands: [Run.self, Validate.self, Agent.self],
        defaultSubcommand: Run.self
    )

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Run scenarios and report.")

        @Argument(help: "Scenario files (.toml).")
        var files: [String]

        @Option(name: .long, help: "Where to run: memory (two real PeerLink nodes over the in-memory medium), iplab (two network namespaces, kernel TCP; root; see scripts/harness-iplab.sh), btlab (inside the Bluetooth lab VM: real radios and a local IP path; see scripts/harness-btlab.sh).")
        var backend: String = "memory"

        @Option(name: .long, help: "Directory for the reports: NAME.json (result) and NAME.svg (timeline).")
        var out: String?

        @Flag(name: .long, help: "Print the JSON results (an array) on stdout instead of text.")
        var json = false

        @Option(name: .long, help: "memory only: the seed of the run's random numbers (node keys, tokens, loss). The same seed gives the same runs, byte for byte; a failing run prints its seed.")
        var seed: UInt64 = 1

        @Option(name: .long, help: "btlab only: the first scenario's controller pair starts at this index (hciN, hciN+1); each next scenario takes the next pair.")
        var firstController = 0

        func run() async throws {
            guard ["memory", "iplab", "btlab"].contains(backend) else {
                throw ValidationError("--backend '\(backend)' is not known; use memory, iplab or btlab")
            }
            guard firstController >= 0 else { throw ValidationError("--first-controller must be 0 or more") }
            if backend == "memory" { HarnessCommand.ensureDeterministicHashing() }
            let executable = backend == "iplab" ? try HarnessCommand.ownExecutable() : ""
            /// The btlab backend gives each scenario its own controller pair (hci0/1, hci2/3, …):
            /// the emulator refuses BR/EDR connections after a few between the same two.
            func runner(_ index: Int) -> ScenarioBackend {
                switch backend {
                case "iplab": return IPLabBackend(executable: executable)
                case "btlab":
                    var b = BTLabBackend()
                    b.firstController = firstController + 2 * index
                    return b
                default: return MemoryBackend(seed: seed)
                }
            }
            let scenarios = try files.map(HarnessCommand.load)
            if let out { try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true) }
            var failed = 0
            var results: [Report.Result] = []
            for (index, s) in scenarios.enumerated() {
                FileHandle.standardError.write(Data("running \(s.name) (\(s.duration) ms)…\n".utf8))
                let record: RunRecord
                do {
                    record = try await runner(index).run(s)
                } catch let e as HarnessError {
                    // A scenario this backend cannot run fails with its reason; the others still run.
                    failed += 1
                    FileHandle.standardError.write(Data("FAIL \(s.name): \(e)\n".utf8))
                    continue
                }
                let verdict = s.evaluate(record)
                if !verdict.passed {
                    failed += 1
                    if backend == "memory" {
                        FileHandle.standardError.write(Data("FAIL \(s.name): replay it with --seed \(seed)\n".utf8))
                    }
                }
                if let out {
                    try Report.json(s, record, verdict).write(to: URL(fileURLWithPath: "\(out)/\(s.name).json"))
                    try Data(Report.svg(s, record, verdict).utf8).write(to: URL(fileURLWithPath: "\(out)/\(s.name).svg"))
                }
                if json { results.append(Report.Result(scenario: s, run: record, verdict: verdict)) } else {
                    print(Report.text(s, record, verdict))
                    fflush(nil)  // each report as its scenario ends, also through a pipe
                }
            }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
                print(String(decoding: try encoder.encode(results), as: UTF8.self))
            } else {
                print("\(scenarios.count - failed) passed, \(failed) failed")
            }
            if failed > 0 { throw ExitCode(1) }
        }
    }

    struct Validate: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check scenario files without running them.")

        @Argument(help: "Scenario files (.toml).")
        var files: [String]

        func run() throws {
            for f in files {
                let s = try HarnessCommand.load(f)
                print("ok   \(f): \(s.name), \(s.links.count) links, \(s.events.count) events, \(s.traffic.count) traffic, \(s.expectations.count) expectations")
            }
        }
    }

    /// This program's path, for the IP lab's agents.
    static func ownExecutable() throws -> String {
        guard let p = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            throw ValidationError("cannot find this program's path (/proc/self/exe)")
        }
        return p
    }

    static func load(_ path: String) throws -> Scenario {
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
        let base = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        do {
            return try Scenario.parse(String(decoding: data, as: UTF8.self), defaultName: base)
        } catch {
            throw ValidationError("\(path): \(error)")
        }
    }

    /// Swift seeds its hash functions per process, so dictionaries iterate in a different
    /// order on every run: a virtual-time run replays exactly only with the seeding off. The
    /// variable is read when the process starts, so the harness starts itself again with it.
    static func ensureDeterministicHashing() {
        guard getenv("SWIFT_DETERMINISTIC_HASHING") == nil else { return }
        setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        // execv returns only on failure: runs still pass, they just do not replay to the byte.
        FileHandle.standardError.write(Data("note: could not restart with SWIFT_DETERMINISTIC_HASHING=1; runs will not replay exactly\n".utf8))
    }
}
