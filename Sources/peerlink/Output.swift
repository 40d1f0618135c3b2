import CPeerLinkSys
import Foundation
import PeerLink

/// Writes human lines or JSON lines, flushed immediately so pipes and tests see them at once.
struct Output: Sendable {
    let json: Bool

    init(json: Bool) {
        self.json = json
        peerlink_line_buffer_stdout()
    }

    /// Prints `text` in text mode, or `object` as one JSON line in JSON mode.
    func emit(_ text: @autoclosure () -> String, _ object: @autoclosure () -> [String: Any]) {
        if json {
            if let data = try? JSONSerialization.data(withJSONObject: object(), options: [.sortedKeys, .withoutEscapingSlashes]) {
                print(String(decoding: data, as: UTF8.self))
            }
        } else {
            print(text())
        }
    }

    /// Status text for people: stderr in text mode, nothing in JSON mode.
    func note(_ text: String) {
        if !json { FileHandle.standardError.write(Data((text + "\n").utf8)) }
    }
}

func stderrLine(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

func describe(_ p: PeerInfo) -> String {
    let info = p.info.keys.sorted().map { "\($0)=\(p.info[$0] ?? "")" }.joined(separator: " ")
    return "\(p.displayName) [\(p.peerID)]" + (info.isEmpty ? "" : " " + info)
}

func json(_ p: PeerInfo) -> [String: Any] {
    ["peer": p.peerID.description, "name": p.displayName, "info": p.info,
     "endpoints": p.endpoints.map { $0.description }]
}

/// A one-line progress bar with bytes, rate and ETA, redrawn on stderr. Hashing (before a
/// file is offered) and reading back a resumed part file get their own line.
final class ProgressBar: @unchecked Sendable {
    private let lock = NSLock()
    private var started = Date()
    private var startBytes: UInt64 = 0
    private var lastDraw = Date.distantPast
    private var stage: ResourceProgress.Stage?
    let label: String

    init(label: String) { self.label = label }

    func update(_ p: ResourceProgress, force: Bool = false) {
        lock.withLock {
            let now = Date()
            if stage != p.stage {
                if stage != nil { FileHandle.standardError.write(Data("\n".utf8)) }
                stage = p.stage
                started = now
                startBytes = p.completed
                lastDraw = .distantPast
            }
            if p.completed == p.resumedFrom, p.stage == .transferring { started = now; startBytes = p.completed }
            guard force || now.timeIntervalSince(lastDraw) > 0.2 || p.completed == p.total else { return }
            lastDraw = now
            let elapsed = max(now.timeIntervalSince(started), 0.001)
            let rate = Double(p.completed - min(startBytes, p.completed)) / elapsed
            let frac = p.total == 0 ? 1 : Double(p.completed) / Double(p.total)
            let width = 24
            let filled = Int(frac * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            let eta = rate > 0 ? Double(p.total - p.completed) / rate : 0
            let resumed = p.resumedFrom > 0 && p.stage == .transferring ? " (resumed at \(bytes(p.resumedFrom)))" : ""
            let what = switch p.stage {
            case .hashing: "hashing \(label)"
            case .verifying: "checking the part of \(label) received before"
            case .transferring: label
            }
            let line = "\r\(what) [\(bar)] \(Int(frac * 100))% \(bytes(p.completed))/\(bytes(p.total)) \(bytes(UInt64(rate)))/s ETA \(Int(eta))s\(resumed)"
            FileHandle.standardError.write(Data(line.utf8))
            if p.completed == p.total { FileHandle.standardError.write(Data("\n".utf8)); stage = nil }
        }
    }
}

func bytes(_ n: UInt64) -> String { ByteCount.text(n) }

func progressJSON(_ p: ResourceProgress) -> [String: Any] {
    ["event": "progress", "peer": p.peer.description, "name": p.name, "direction": p.direction.rawValue,
     "completed": p.completed, "total": p.total, "resumedFrom": p.resumedFrom, "stage": p.stage.rawValue]
}

/// A failure while running (not a usage mistake): printed as "Error: …" without the usage text.
struct RuntimeFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
