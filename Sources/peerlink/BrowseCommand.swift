import ArgumentParser
import Foundation
import PeerLink

struct BrowseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browse",
        abstract: "List nearby peers of a service as they are found and lost.",
        discussion: """
        Runs until interrupted, or for --timeout seconds. While a daemon runs here (its API \
        socket answers, found as `peerlink status` finds it), lists the peers the daemon's \
        browser sees, without radios of its own; --direct browses with this command's own \
        radios instead (needs avahi-daemon for IP; see `peerlink doctor`).
        """)

    @OptionGroup var node: NodeOptions

    @Option(name: .long, help: "Stop after this many seconds (default: run until Ctrl-C).")
    var timeout: Double?

    @Flag(name: .long, help: "Browse with this command's own radios even when a daemon runs.")
    var direct = false

    @Option(name: .long, help: ArgumentHelp("The daemon's API socket (default: as `peerlink status` finds it; it must answer).", valueName: "path"))
    var socket: String?

    func validate() throws {
        if direct, socket != nil { throw ValidationError("--socket goes through the daemon; --direct does not use it") }
    }

    func run() async throws {
        if !direct {
            let daemon = DaemonConnection(socket: socket)
            switch daemon.probe() {
            case .running:
                let named = node.service == NodeOptions.defaultService ? nil : node.service
                let browse = DaemonBrowse(daemon: daemon, service: named, timeout: timeout, out: Output(json: node.json))
                try await BlockingCall.run("pl.browse.daemon") { try browse.run() }
                return
            case let .refused(why):
                throw RuntimeFailure("\(why); use --direct to browse with this command's own radios")
            case .absent:
                if socket != nil { throw RuntimeFailure("no daemon answers at \(daemon.socketPath)") }
            }
        }
        let service = try node.serviceType()
        let (n, _, plan) = try await node.makeNode()
        let out = Output(json: node.json)
        for note in plan.notes { out.note(note) }
        let browser = Browser(node: n, service: service, discoveries: plan.discoveries(for: n))
        do {
            try await browser.start()
        } catch {
            throw RuntimeFailure("cannot browse: \(error) (run `peerlink doctor`)")
        }
        out.note("browsing for '\(service)' on \(plan.summary(service)); Ctrl-C to stop")
        if let timeout {
            Task {
                try await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                browser.stop()
            }
        }
        for await e in browser.events {
            switch e {
            case let .found(p):
                out.emit("found   \(describe(p)) at \(p.endpoints.map(\.description).joined(separator: ", "))",
                         ["event": "found"].merging(json(p)) { a, _ in a })
            case let .updated(p):
                out.emit("updated \(describe(p)) at \(p.endpoints.map(\.description).joined(separator: ", "))",
                         ["event": "updated"].merging(json(p)) { a, _ in a })
            case let .lost(id):
                out.emit("lost    [\(id)]", ["event": "lost", "peer": id.description])
            case let .notice(text):
                out.emit("note    \(text)", ["event": "notice", "text": text])
            }
        }
    }
}
