import ArgumentParser
import Foundation
import PeerLink
import PeerLinkDaemon

struct ChatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat",
        abstract: "Exchange lines of text with a peer.",
        discussion: """
        With --peer, finds that peer (full peer ID, a prefix of at least 4 characters, or its \
        display name), invites it, and reconnects by itself when the link is lost. Without \
        --peer, advertises and chats with whoever is accepted. Each line typed is sent as a \
        reliable message; end with Ctrl-D. While a daemon runs here, each line becomes a \
        message item the daemon delivers once the peer is in range, and the messages it \
        receives are shown (--direct chats with this command's own radios instead).
        """)

    @OptionGroup var node: NodeOptions
    @OptionGroup var accept: AcceptOptions

    @Option(name: .long, help: "The peer to invite: peer ID, ID prefix (≥ 4 characters) or display name.")
    var peer: String?

    @Option(name: .long, help: "Text sent with the invitation.")
    var context: String = ""

    @Option(name: .long, help: "Seconds to look for the peer before giving up.")
    var timeout: Double = 30

    @Option(name: .long, help: ArgumentHelp("Discovery info entry when advertising, key=value (repeatable).", valueName: "key=value"))
    var info: [String] = []

    @Flag(name: .long, help: "Chat with this command's own radios even when a daemon runs.")
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
                try await DaemonChat(daemon: daemon, peer: peer, out: Output(json: node.json)).run()
                return
            case let .refused(why):
                throw RuntimeFailure("\(why); use --direct to chat with this command's own radios")
            case .absent:
                if socket != nil { throw RuntimeFailure("no daemon answers at \(daemon.socketPath)") }
            }
        }
        if let peer {
            try await invite(peer)
        } else {
            let discoveryInfo: DiscoveryInfo
            do { discoveryInfo = try DiscoveryInfo(arguments: info) } catch { throw ValidationError("--info: \(error)") }
            let host = try await Hosting.start(node, command: "chat", info: discoveryInfo, accept: accept)
            let names = NameBook()
            let session = host.session
            Task { for await e in session.events { printCommon(e, names: names, out: host.output) } }
            while let line = await LineReader.shared.next() {
                let peers = await session.connectedPeers()
                if peers.isEmpty { host.output.note("no peer is connected yet; not sent"); continue }
                do { try await session.send(Array(line.utf8), to: peers) } catch { host.output.note("not sent: \(error)") }
            }
            await host.finish()
        }
    }

    private func invite(_ text: String) async throws {
        guard context.utf8.count <= Invitation.maxContextBytes else {
            throw ValidationError("--context is \(context.utf8.count) bytes; the limit is \(Invitation.maxContextBytes)")
        }
        let d = try await Dialling(node, command: "chat", peer: text, lookupTimeout: timeout, context: Array(context.utf8))
        let names = NameBook()
        let out = d.output
        do {
            let p = try await d.connect()
            names.set(p.peerID, p.displayName)
        } catch {
            throw RuntimeFailure("\(error)")
        }
        let reconnector = Reconnector(d)
        Task {
            for await e in d.session.events {
                printCommon(e, names: names, out: out)
                if case let .peerStateChanged(_, _, .notConnected) = e { reconnector.trigger() }
            }
        }
        while let line = await LineReader.shared.next() {
            guard let p = d.peer else { continue }
            do { try await d.session.send(Array(line.utf8), to: [p.peerID]) } catch { out.note("not sent: \(error)") }
        }
        await d.session.disconnect()
    }
}

/// Runs at most one reconnection loop at a time.
final class Reconnector: @unchecked Sendable {
    private let lock = NSLock()
    private var running = false
    let dialling: Dialling
    init(_ d: Dialling) { dialling = d }

    func trigger() {
        let start: Bool = lock.withLock { defer { running = true }; return !running }
        guard start else { return }
        Task {
            _ = await dialling.reconnect()
            lock.withLock { running = false }
        }
    }
}
