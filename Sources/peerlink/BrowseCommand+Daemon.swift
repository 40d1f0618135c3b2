import Foundation
import PeerLinkDaemon

/// `peerlink browse` while a daemon runs: the peers its browser sees now (`GET /v1/peers`),
/// then each one found or lost as the daemon's event stream says, in the lines and JSON
/// objects `browse` prints with radios of its own.
struct DaemonBrowse {
    let daemon: DaemonConnection
    /// The service the user named, when not the default: it must be the daemon's.
    let service: String?
    let timeout: Double?
    let out: Output

    func run() throws {
        let status = try daemon.json("GET", "/v1/status")
        let since = ((status["events"] as? [String: Any])?["last_id"] as? NSNumber)?.uint64Value ?? 0
        let served = status["service"] as? String ?? "?"
        if let service, service != served {
            throw RuntimeFailure("the daemon at \(daemon.socketPath) browses '\(served)', not '\(service)'; "
                                 + "use --direct to browse '\(service)' with this command's own radios")
        }
        out.note("browsing for '\(served)' through the daemon at \(daemon.socketPath); Ctrl-C to stop")
        var shown = Set<String>()
        for p in try peers() { emitFound(p, &shown) }
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        var last = since
        while deadline.map({ Date() < $0 }) ?? true {
            let idle = deadline.map { max(0.1, min(40, $0.timeIntervalSinceNow)) } ?? 40
            do {
                last = try daemon.client.follow(after: last, idle: .milliseconds(Int(idle * 1000))) { e in
                    switch e.kind {
                    case "peer.found":
                        if let p = (try? peers())?.first(where: { $0["peer"] as? String == e.peer }) { emitFound(p, &shown) }
                    case "peer.lost":
                        if let id = e.peer, shown.remove(id) != nil { out.emit("lost    [\(id)]", ["event": "lost", "peer": id]) }
                    default: break
                    }
                    return deadline.map { Date() < $0 } ?? true
                }
            } catch let end as DaemonClient.StreamEnd {
                switch end {
                case .lost:
                    if deadline.map({ Date() >= $0 }) ?? false { return }
                    out.note("(\(end); following again)")
                    Thread.sleep(forTimeInterval: 1)
                case let .gone(oldest):
                    // Events were missed: the daemon's list now says who is there.
                    let now = try peers()
                    let ids = Set(now.compactMap { $0["peer"] as? String })
                    for id in shown.subtracting(ids) { shown.remove(id); out.emit("lost    [\(id)]", ["event": "lost", "peer": id]) }
                    for p in now { emitFound(p, &shown) }
                    last = oldest > 0 ? oldest - 1 : 0
                case .refused:
                    throw RuntimeFailure("\(end)")
                }
            }
        }
    }

    func peers() throws -> [[String: Any]] { try daemon.json("GET", "/v1/peers")["peers"] as? [[String: Any]] ?? [] }

    func emitFound(_ p: [String: Any], _ shown: inout Set<String>) {
        guard let id = p["peer"] as? String, shown.insert(id).inserted else { return }
        let name = p["name"] as? String ?? "?"
        let info = (p["info"] as? [String: String]) ?? [:]
        let endpoints = p["endpoints"] as? [String] ?? []
        let text = info.keys.sorted().map { "\($0)=\(info[$0] ?? "")" }.joined(separator: " ")
        out.emit("found   \(name) [\(id)]\(text.isEmpty ? "" : " " + text) at \(endpoints.joined(separator: ", "))",
                 ["event": "found", "peer": id, "name": name, "info": info, "endpoints": endpoints])
    }
}
