import ArgumentParser
import Foundation
import PeerLink
import PeerLinkDaemon

/// `peerlink links`: what every running peerlink command on this machine is connected to,
/// over which links, and why each link carries what it carries.
struct LinksCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "links",
        abstract: "Show the links of running peerlink commands (chat, advertise, receive, send).",
        discussion: """
        Every running peerlink command that has a session answers on a Unix socket in \
        $XDG_RUNTIME_DIR/peerlink (else /tmp/peerlink-<uid>; PEERLINK_RUNTIME_DIR overrides). \
        For each peer: each link's medium, remote address, state (up, or suspected while it is \
        silent with data in flight), round-trip time, probe loss, measured throughput, the \
        roles it carries (control, reliable, bulk, unreliable), the bytes it moved on the wire \
        (handshake, ciphertext and framing, both ways) and the link policy's reason. \
        A running daemon's links are shown too, read from its API socket (found as `peerlink \
        status` finds it, or --socket). Exit status 1 when no running command was found.
        """
    )

    @Flag(name: .long, help: "Print the reports as one JSON array.")
    var json = false

    @Option(name: .long, help: "Show only this process.")
    var pid: Int32?

    @Option(name: .long, help: ArgumentHelp("The daemon's API socket (default: as `peerlink status` finds it).", valueName: "path"))
    var socket: String?

    func run() throws {
        var (reports, problems) = ControlClient.collect()
        switch Self.daemonReport(socket: socket) {
        case let .success(r?): reports.append(r)
        case .success(nil): break
        case let .failure(e): problems.append("the daemon: \(e)")
        }
        if let pid { reports = reports.filter { $0.pid == pid } }
        let out = Output(json: json)
        for p in problems { out.note("no report from \(p)") }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            print(reports.isEmpty ? "[]" : String(decoding: (try? encoder.encode(reports)) ?? Data("[]".utf8), as: UTF8.self))
        } else {
            for r in reports { print(LinksCommand.render(r), terminator: "") }
        }
        if reports.isEmpty {
            out.note("no running peerlink command found\(pid.map { " with pid \($0)" } ?? "") (looked in \(ControlDirectory.path))")
            throw ExitCode(1)
        }
    }

    /// The running daemon's links from `GET /v1/status` (nil when no daemon answers).
    static func daemonReport(socket: String?) -> Result<ControlReport?, RuntimeFailure> {
        let daemon = DaemonConnection(socket: socket)
        guard FileManager.default.fileExists(atPath: daemon.socketPath) else { return .success(nil) }
        let status: [String: Any]
        do {
            status = try daemon.json("GET", "/v1/status")
        } catch let e as RuntimeFailure {
            return e.description.contains("no daemon at") ? .success(nil) : .failure(e)
        } catch {
            return .failure(RuntimeFailure("\(error)"))
        }
        guard let links = status["links"] as? [String: Any], let list = links["peers"],
              let data = try? JSONSerialization.data(withJSONObject: list),
              let peers = try? JSONDecoder().decode([PeerLinks].self, from: data) else {
            return .failure(RuntimeFailure("its status has no links (an older daemon?)"))
        }
        return .success(ControlReport(pid: Int32(status["pid"] as? Int ?? 0), command: "daemon", peer: status["peer"] as? String ?? "?",
                                      name: status["name"] as? String ?? "?", policy: links["policy"] as? String ?? "?", peers: peers))
    }

    static func render(_ r: ControlReport) -> String {
        var s = "\(r.command) (pid \(r.pid)) \(r.name) [\(r.peer)], policy \(r.policy)\n"
        if r.peers.isEmpty { s += "  no peers\n" }
        for p in r.peers.sorted(by: { $0.peer < $1.peer }) {
            s += "  \(p.displayName) [\(p.peer.short)] \(p.state.rawValue)\n"
            for l in p.links {
                let rtt = l.rtt.map { "\($0.milliseconds) ms" } ?? "-"
                let rate = l.throughput.map { bytes(UInt64($0)) + "/s" } ?? "-"
                let carries = l.carries.isEmpty ? "nothing" : l.carries.joined(separator: ",")
                s += "    link \(l.id) \(l.medium.rawValue) \(l.remote) \(l.state) rtt \(rtt) loss \(Int(l.loss * 100))% \(rate) carries \(carries)\n"
                if let w = l.wire { s += "      wire: sent \(bytes(w.sent)), received \(bytes(w.received))\n" }
                s += "      why: \(l.reason)\n"
            }
            if !p.upgrades.isEmpty { s += "    negotiated links:\n" }
            for u in p.upgrades {
                let when = u.time.formatted(.iso8601.time(includingFractionalSeconds: true))
                s += "      \(when) \(u.medium) #\(u.id) \(u.step.rawValue) (+\(u.sinceLastStep.milliseconds) ms, \(u.sinceProposal.milliseconds) ms since proposed)"
                s += u.detail.isEmpty ? "\n" : ": \(u.detail)\n"
            }
        }
        return s
    }
}
