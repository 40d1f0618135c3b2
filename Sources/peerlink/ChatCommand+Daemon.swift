import Foundation
import PeerLink
import Synchronization
import PeerLinkDaemon

/// `peerlink chat` while a daemon runs: each line typed becomes a message item for the peer
/// (`POST /v1/items`, delivered once when the peer is in range, as the daemon delivers
/// everything), and the messages the daemon receives are printed as they land (events
/// `message.received`, the text read from the inbox file the event names).
struct DaemonChat {
    let daemon: DaemonConnection
    /// The peer to write to (ID, ID prefix or trusted name; the daemon resolves it); nil
    /// only shows what arrives.
    let peer: String?
    let out: Output

    func run() async throws {
        let status = try daemon.json("GET", "/v1/status")
        let since = ((status["events"] as? [String: Any])?["last_id"] as? NSNumber)?.uint64Value ?? 0
        var names: [String: String] = [:]
        for p in status["peers"] as? [[String: Any]] ?? [] {
            if let id = p["peer"] as? String, let name = p["name"] as? String { names[id] = name }
        }
        out.note("chatting through the daemon at \(daemon.socketPath)"
                 + (peer.map { ": lines go to \($0) as messages, delivered when it is in range; Ctrl-D ends" } ?? ": showing messages as they arrive (--peer NAME to write)"))
        let follower = Task.detached { [daemon, out, peer] in
            await Self.follow(daemon, after: since, names: names, only: peer, out: out)
        }
        while let line = await LineReader.shared.next() {
            guard let peer else { out.note("not sent: name a peer with --peer to write"); continue }
            do {
                let queued = try await BlockingCall.run("pl.chat.send") { () throws -> (peer: String, item: String) in
                    let item = try daemon.json("POST", "/v1/items", body: ["peer": peer, "message": line])["item"] as? [String: Any]
                    return (item?["peer"] as? String ?? peer, item?["id"] as? String ?? "")
                }
                if out.json { out.emit("", ["event": "queued", "peer": queued.peer, "item": queued.item, "text": line]) }
            } catch {
                out.note("not sent: \(error)")
            }
        }
        follower.cancel()
    }

    /// Prints each message the daemon receives (from `only` when given, matched against the
    /// sender's ID, ID prefix or name) until cancelled.
    static func follow(_ daemon: DaemonConnection, after since: UInt64, names: [String: String], only: String?, out: Output) async {
        // The last event handled, kept across reconnections of the stream so that none is
        // printed twice.
        let last = Mutex<UInt64>(since)
        while !Task.isCancelled {
            do {
                _ = try await BlockingCall.run("pl.chat.follow") {
                    try daemon.client.follow(after: last.withLock { $0 }, idle: .seconds(40)) { e in
                        last.withLock { $0 = e.id }
                        guard e.kind == "message.received", let from = e.peer else { return true }
                        let name = names[from] ?? String(from.prefix(8))
                        if let only, !(from == only || from.hasPrefix(only.lowercased()) || name == only) { return true }
                        let text = e.path.flatMap { FileManager.default.contents(atPath: $0) }.map { String(decoding: $0, as: UTF8.self) }
                        out.emit("\(name): \(text ?? "(a message this user cannot read, in \(e.path ?? "the daemon's inbox"))")",
                                 ["event": "message", "peer": from, "name": name, "text": text ?? NSNull(), "path": e.path ?? ""])
                        return true
                    }
                }
            } catch let end as DaemonClient.StreamEnd {
                if case let .gone(oldest) = end { last.withLock { $0 = oldest > 0 ? oldest - 1 : 0 }; continue }
                if case .refused = end { out.note("\(end)"); return }
                try? await Task.sleep(for: .seconds(1))
            } catch {
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}
