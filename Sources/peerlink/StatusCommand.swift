import ArgumentParser
import Foundation
import PeerLinkDaemon

/// `peerlink status`: what the running daemon is doing, through its API (docs/API.md).
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the running daemon's node, peers and items (through its API socket).",
        discussion: """
        The socket is daemon.sock in the daemon's runtime directory: PEERLINK_RUNTIME_DIR, \
        else /run/peerlink when run as root, else $XDG_RUNTIME_DIR/peerlink (docs/API.md). \
        Exits 1 when no daemon answers there.
        """)

    @Option(name: .long, help: ArgumentHelp("The daemon's API socket (default: by the rule above).", valueName: "path"))
    var socket: String?

    @Flag(name: .long, help: "Print the daemon's answer as JSON.")
    var json = false

    func run() throws {
        let path = socket ?? DaemonPaths.socket(in: DaemonPaths.runtimeDirectory())
        let answer: (status: Int, body: [UInt8])
        do {
            answer = try DaemonClient(socketPath: path).request("GET", "/v1/status")
        } catch {
            stderrLine("peerlink status: \(error)")
            throw ExitCode(1)
        }
        guard answer.status == 200, let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any] else {
            stderrLine("peerlink status: the daemon answered \(answer.status): \(String(decoding: answer.body, as: UTF8.self))")
            throw ExitCode(1)
        }
        if json {
            print(String(decoding: answer.body, as: UTF8.self), terminator: "")
            return
        }
        print(Self.text(object, socket: path))
    }

    static func text(_ o: [String: Any]) -> String { text(o, socket: nil) }

    static func text(_ o: [String: Any], socket: String?) -> String {
        let items = o["items"] as? [String: Int] ?? [:]
        let peers = o["peers"] as? [[String: String]] ?? []
        let uptime = Int(o["uptime_seconds"] as? Double ?? 0)
        var lines = [
            "\(o["name"] ?? "?") [\(o["peer"] ?? "?")], service \(o["service"] ?? "?"), up \(uptime / 3600)h\(uptime / 60 % 60)m\(uptime % 60)s",
            "items: " + ["queued", "sending", "delivered", "expired", "failed"].map { "\(items[$0] ?? 0) \($0)" }.joined(separator: ", "),
            "peers connected: \(peers.count)",
        ]
        lines += peers.map { "  \($0["name"] ?? "?") [\($0["peer"] ?? "?")]" }
        lines += ["inbox:  \(o["inbox"] ?? "?")", "outbox: \(o["outbox"] ?? "?")"]
        if let socket { lines.append("api:    \(socket)") }
        return lines.joined(separator: "\n")
    }
}
