import Foundation
import PeerLinkStore
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Starts `peerlink-store-torture` (built beside the test bundle; `PEERLINK_STORE_TORTURE`
/// overrides) on one directory and reads back what its runs left.
struct TortureRun {
    static let chunkPoint = "torture.chunk.afterWrite"
    static let chunk = 32 * 1024

    static var binary: String {
        if let p = ProcessInfo.processInfo.environment["PEERLINK_STORE_TORTURE"] { return p }
        return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("peerlink-store-torture").path
    }

    enum End: Equatable {
        case finished
        case killed
        case failed(String)
    }

    let dir: String
    let items: Int
    let seed: UInt64
    var runs = 0

    /// Starts the next run (with `crashAt` armed, if given) and returns the running process.
    mutating func start(crashAt: String? = nil) throws -> Process {
        runs += 1
        _ = FileManager.default.createFile(atPath: dir + "/stderr.log", contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = [dir, String(runs), "--items", String(items), "--seed", String(seed), "--chunk", String(Self.chunk)]
        var env = ProcessInfo.processInfo.environment
        env[CrashPoint.variable] = crashAt
        p.environment = env
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle(forWritingAtPath: dir + "/stderr.log") ?? FileHandle.nullDevice
        try p.run()
        return p
    }

    static func end(of p: Process, dir: String) -> End {
        p.waitUntilExit()
        if p.terminationReason == .uncaughtSignal && p.terminationStatus == SIGKILL { return .killed }
        if p.terminationReason == .exit && p.terminationStatus == 0 { return .finished }
        let err = (try? String(contentsOfFile: dir + "/stderr.log", encoding: .utf8)) ?? ""
        return .failed("\(p.terminationReason == .exit ? "exit" : "signal") \(p.terminationStatus): \(err)")
    }

    /// Runs to the end.
    mutating func run(crashAt: String? = nil) throws -> End {
        let p = try start(crashAt: crashAt)
        return Self.end(of: p, dir: dir)
    }
}

/// The manifest the torture wrote (the fields the checks need).
struct TortureManifest: Decodable {
    struct Item: Decodable {
        var index: Int
        var id: String
        var name: String
        var size: UInt64
        var digest: String
        var expiring: Bool
    }

    var items: [Item]

    init(dir: String) throws {
        self = try JSONDecoder().decode(TortureManifest.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/manifest.json")))
    }
}

func sha256Hex(_ path: String) -> String? {
    (try? ContentDigest.of(file: path)).map(ContentDigest.hex)
}

/// Work each restart redid, from the torture's journal: payload bytes written again that an
/// earlier run had already written (and fsynced), and steps the open had to finish.
struct RedoReport {
    var resentBytes: [Int: UInt64] = [:]
    var recoverySteps: [Int: Int] = [:]
    var newLandings: [Int: Int] = [:]

    init(dir: String) {
        let text = (try? String(contentsOfFile: dir + "/journal.log", encoding: .utf8)) ?? ""
        var written: [Int: [(UInt64, UInt64)]] = [:]
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count >= 2, let run = Int(f[1]) else { continue }
            switch f[0] {
            case "chunk" where f.count == 5:
                guard let i = Int(f[2]), let off = UInt64(f[3]), let len = UInt64(f[4]) else { continue }
                let overlap = (written[i] ?? []).reduce(UInt64(0)) { sum, r in
                    let lo = max(r.0, off), hi = min(r.1, off + len)
                    return sum + (hi > lo ? hi - lo : 0)
                }
                resentBytes[run, default: 0] += overlap
                written[i, default: []].append((off, off + len))
            case "start":
                let steps = f.dropFirst(2).compactMap { $0.split(separator: "=").last.flatMap { Int($0) } }.reduce(0, +)
                recoverySteps[run] = steps
            case "land" where f.count == 4 && f[3] == "new":
                if let i = Int(f[2]) { newLandings[i, default: 0] += 1 }
            default: break
            }
        }
    }
}
