import Foundation
import PeerLinkDaemon

/// `peerlink send` while a daemon runs: each file is queued as an item through the daemon's
/// API (`POST /v1/items`), and with `--wait` the daemon's event stream is followed until every
/// item is delivered, expired or failed.
struct DaemonSend {
    let daemon: DaemonConnection
    let files: [String]
    /// The peer as the user named it (ID, ID prefix or trusted name; the daemon resolves it).
    let peer: String
    let wait: Bool
    let out: Output

    /// Queues the files; with `wait`, follows them. Returns how many failed.
    func run() throws -> Int {
        var since: UInt64 = 0
        if wait {
            // Follow only what happens from now on: events after the last one before the items exist.
            let status = try daemon.json("GET", "/v1/status")
            since = ((status["events"] as? [String: Any])?["last_id"] as? NSNumber)?.uint64Value ?? 0
        }
        var failures = 0
        var queued: [String: String] = [:]  // item ID → file name
        var peerID: String?
        for file in files {
            let name = (file as NSString).lastPathComponent
            do {
                let answer = try daemon.json("POST", "/v1/items", body: ["peer": peer, "path": Self.absolute(file)])
                guard let item = answer["item"] as? [String: Any], let id = item["id"] as? String else {
                    throw RuntimeFailure("the daemon's answer has no item")
                }
                let size = (item["size"] as? NSNumber)?.uint64Value ?? 0
                queued[id] = name
                peerID = item["peer"] as? String
                out.emit("queued '\(name)' (\(bytes(size))) for \(peer) (item \(id)); the daemon delivers it when \(peer) is in range",
                         ["event": "queued", "name": name, "item": id, "peer": item["peer"] as? String ?? peer, "size": size])
            } catch {
                failures += 1
                out.emit("could not queue '\(name)': \(error)", ["event": "failed", "name": name, "error": "\(error)"])
            }
        }
        if wait, !queued.isEmpty { failures += try follow(queued, of: peerID, after: since) }
        return failures
    }

    /// Follows the event stream until each item is settled; returns how many did not arrive.
    func follow(_ items: [String: String], of peerID: String?, after since: UInt64) throws -> Int {
        var waiting = items, failures = 0, last = since
        let total = items.count
        out.note("waiting until \(peer) has \(total == 1 ? "it" : "all \(total)") (Ctrl-C stops waiting; the daemon keeps the items)")
        while !waiting.isEmpty {
            do {
                last = try daemon.client.follow(after: last) { e in
                    guard let id = e.item, let name = waiting[id] else {
                        if e.kind == "peer.connected" || e.kind == "peer.left", let p = e.peer, p == peerID {
                            let now = e.kind == "peer.connected" ? "in range: the daemon is sending" : "gone: the daemon sends the rest when it is back"
                            out.emit("\(e.name ?? peer) is \(now)", ["event": e.kind, "peer": p, "name": e.name ?? ""])
                        }
                        return true
                    }
                    switch e.kind {
                    case "item.delivered":
                        waiting[id] = nil
                        out.emit("delivered '\(name)' to \(peer) (\(total - waiting.count) of \(total)); the peer verified and recorded it",
                                 ["event": "delivered", "name": name, "item": id, "peer": e.peer ?? peer])
                    case "item.expired", "item.failed":
                        waiting[id] = nil
                        failures += 1
                        let what = e.kind == "item.expired" ? "expired" : "failed"
                        out.emit("'\(name)' \(what): \(e.reason ?? "no reason given")",
                                 ["event": what, "name": name, "item": id, "reason": e.reason ?? ""])
                    default: break
                    }
                    return !waiting.isEmpty
                }
            } catch let end as DaemonClient.StreamEnd {
                switch end {
                case .lost:
                    out.note("(\(end); following again)")
                    Thread.sleep(forTimeInterval: 1)
                case let .gone(oldest):
                    // Events were missed: read the items' states, then follow from the oldest held.
                    failures += try settleFromItems(&waiting)
                    last = oldest > 0 ? oldest - 1 : 0
                case .refused:
                    throw RuntimeFailure("\(end)")
                }
            }
        }
        return failures
    }

    /// Settles the waited-for items the ledger has already settled (after missed events).
    func settleFromItems(_ waiting: inout [String: String]) throws -> Int {
        let answer = try daemon.json("GET", "/v1/items?state=delivered,expired,failed")
        var failures = 0
        for item in answer["items"] as? [[String: Any]] ?? [] {
            guard let id = item["id"] as? String, let name = waiting[id], let state = item["state"] as? String else { continue }
            waiting[id] = nil
            if state == "delivered" {
                out.emit("delivered '\(name)' to \(peer)", ["event": "delivered", "name": name, "item": id])
            } else {
                failures += 1
                let reason = item["reason"] as? String ?? "no reason given"
                out.emit("'\(name)' \(state): \(reason)", ["event": state, "name": name, "item": id, "reason": reason])
            }
        }
        return failures
    }

    /// `path` made absolute against the working directory (the daemon needs absolute paths).
    static func absolute(_ path: String) -> String {
        let full = path.hasPrefix("/") ? path : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
        return (full as NSString).standardizingPath
    }
}
