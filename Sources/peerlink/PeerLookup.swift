import ArgumentParser
import Foundation
import PeerLink

/// Finds the peer named on the command line (full ID, ID prefix of ≥ 4 characters, or exact
/// display name) among browse results.
struct PeerSelector: Sendable {
    let text: String

    func matches(_ p: PeerInfo) -> Bool {
        let t = text.lowercased()
        if p.peerID.description == t { return true }
        if t.count >= 4, p.peerID.description.hasPrefix(t) { return true }
        return p.displayName == text
    }
}

enum LookupError: Error, CustomStringConvertible {
    case notFound(String, service: String, seconds: Double, seen: [PeerInfo])
    case ambiguous(String, [PeerInfo])

    var description: String {
        switch self {
        case let .notFound(t, s, secs, seen):
            let list = seen.isEmpty ? "no peers at all were found" : "found only: " + seen.map { "\($0.displayName) [\($0.peerID.short)]" }.joined(separator: ", ")
            return "no peer matching '\(t)' advertised service '\(s)' within \(Int(secs)) s (\(list)); is `peerlink advertise --service \(s)` running there? `peerlink doctor` checks this machine"
        case let .ambiguous(t, ps):
            return "'\(t)' matches several peers: " + ps.map { "\($0.displayName) [\($0.peerID)]" }.joined(separator: ", ") + "; give more of the peer ID"
        }
    }
}

/// Keeps browsing in the background and remembers the latest record of every peer.
final class PeerDirectory: @unchecked Sendable {
    private let lock = NSLock()
    private var peers: [PeerID: PeerInfo] = [:]
    let browser: Browser

    init(browser: Browser, output: Output) async throws {
        self.browser = browser
        try await browser.start()
        Task { [weak self] in
            for await e in browser.events {
                switch e {
                case let .found(p), let .updated(p): self?.update(p)
                case let .lost(id): self?.remove(id)
                case let .notice(n): output.note("discovery: \(n)")
                }
            }
        }
    }

    private func update(_ p: PeerInfo) {
        lock.withLock { peers[p.peerID] = p }
    }

    private func remove(_ id: PeerID) { lock.withLock { _ = peers.removeValue(forKey: id) } }

    var all: [PeerInfo] { lock.withLock { Array(peers.values) } }

    /// Waits up to `timeout` seconds for exactly one peer matching `selector`.
    func find(_ selector: PeerSelector, service: String, timeout: Double) async throws -> PeerInfo {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let matches = all.filter(selector.matches)
            if matches.count == 1, let m = matches.first { return m }
            if matches.count > 1 {
                // An exact ID match wins over prefix/name matches.
                if let exact = matches.first(where: { $0.peerID.description == selector.text.lowercased() }) { return exact }
                throw LookupError.ambiguous(selector.text, matches)
            }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { throw LookupError.notFound(selector.text, service: service, seconds: timeout, seen: all) }
            try? await Task.sleep(nanoseconds: UInt64(min(left, 0.2) * 1e9))
        }
    }
}
