import ArgumentParser
import Foundation
import PeerLink
import PeerLinkDaemon

struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send files to a peer (through the running daemon, when one runs).",
        discussion: """
        While a daemon runs here (its API socket answers, found as `peerlink status` finds \
        it), each file is queued through it as an item for the peer and the command returns: \
        the daemon delivers it when the peer is in range, exactly once, and keeps it until then \
        (or until its time to live passes). The peer is then named as the daemon knows it: \
        its ID, an ID prefix of 8 or more characters, or a name in the trust store. --wait \
        follows the daemon's events until every file is delivered (exit 0) or one expires or \
        fails (exit 1, with the reason). --direct opens this command's own radios instead, \
        as without a daemon.

        Without a daemon (or with --direct) the command finds the peer, which must be running \
        `peerlink receive` (or a daemon that accepts it), and sends the files itself. \
        Each file's SHA-256 is checked by the receiver before it appears under its final name. \
        If the link is lost, the transfer reconnects and resumes where it stopped (up to \
        --retries times); running the same command again later also resumes. With several files, \
        each is hashed while the one before it travels, so its offer goes out at once.
        """)

    @OptionGroup var node: NodeOptions

    @Argument(help: "Files to send.")
    var files: [String]

    @Option(name: .long, help: "The receiving peer: peer ID, ID prefix (≥ 4 characters) or display name.")
    var to: String

    @Option(name: .long, help: "Seconds to look for the peer before giving up.")
    var timeout: Double = 30

    @Option(name: .long, help: "Reconnect-and-resume attempts per file after a lost link.")
    var retries: Int = 5

    @Flag(name: .long, help: "Open this command's own radios even when a daemon runs.")
    var direct = false

    @Flag(name: .long, help: "Through the daemon: wait until each file is delivered (exit 1 when one expires or fails).")
    var wait = false

    @Option(name: .long, help: ArgumentHelp("The daemon's API socket (default: as `peerlink status` finds it; it must answer).", valueName: "path"))
    var socket: String?

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("name at least one file to send") }
        for f in files {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: f, isDirectory: &isDir) else { throw ValidationError("\(f): no such file") }
            guard !isDir.boolValue else { throw ValidationError("\(f) is a directory; send the files in it") }
            guard FileManager.default.isReadableFile(atPath: f) else { throw ValidationError("\(f) is not readable") }
        }
        guard retries >= 0 else { throw ValidationError("--retries must be 0 or more") }
        if direct, wait || socket != nil { throw ValidationError("--wait and --socket go through the daemon; --direct does not use it") }
    }

    func run() async throws {
        if !direct {
            let daemon = DaemonConnection(socket: socket)
            switch daemon.probe() {
            case .running:
                let failures = try DaemonSend(daemon: daemon, files: files, peer: to, wait: wait, out: Output(json: node.json)).run()
                if failures > 0 { throw ExitCode(1) }
                return
            case let .refused(why):
                // Opening radios beside a daemon that holds them would fight it: say so instead.
                throw RuntimeFailure("\(why); use --direct to send with this command's own radios")
            case .absent:
                break
            }
            if socket != nil { throw RuntimeFailure("no daemon answers at \(daemon.socketPath)") }
            if wait { throw RuntimeFailure("--wait needs a running daemon, and none answers at \(daemon.socketPath)") }
        }
        let d = try await Dialling(node, command: "send", peer: to, lookupTimeout: timeout, context: Array("send \(files.count) file(s)".utf8))
        let out = d.output
        let peer: PeerInfo
        do { peer = try await d.connect() } catch { throw RuntimeFailure("\(error)") }
        let names = NameBook()
        names.set(peer.peerID, peer.displayName)
        Task { for await e in d.session.events { printCommon(e, names: names, out: out, showMessages: false) } }
        var failures = 0
        let session = d.session
        for (index, file) in files.enumerated() {
            let name = (file as NSString).lastPathComponent
            let bar = ProgressBar(label: name)
            let following: String? = index + 1 < files.count ? files[index + 1] : nil
            let preparing = FirstTime()
            var attempt = 0
            while true {
                do {
                    try await session.sendResource(at: file, to: peer.peerID) { p in
                        // Once this file is hashed and on its way, the next one is hashed
                        // while it travels, so the next offer goes out at once.
                        if p.stage == .transferring, let following, preparing.claim() {
                            Task { try? await session.prepareToSend(fileAt: following) }
                        }
                        if out.json { out.emit("", progressJSON(p)) } else { bar.update(p) }
                    }
                    let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? UInt64) ?? 0
                    out.emit("sent '\(name)' (\(bytes(size))) to \(peer.displayName); the receiver verified its SHA-256",
                             ["event": "sent", "name": name, "peer": peer.peerID.description, "size": size, "verified": true])
                    break
                } catch PeerLinkError.notConnected where attempt < retries {
                    attempt += 1
                    out.note("\nlink lost while sending '\(name)'; reconnecting to resume (attempt \(attempt) of \(retries))")
                    _ = await withTimeout(60) { await d.reconnect() }
                } catch {
                    failures += 1
                    out.emit("\nfailed to send '\(name)': \(error)", ["event": "failed", "name": name, "error": "\(error)"])
                    break
                }
            }
        }
        await d.session.disconnect()
        if failures > 0 { throw ExitCode(1) }
    }
}

/// True the first time it is asked, from any thread; false after.
final class FirstTime: @unchecked Sendable {
    private let lock = NSLock()
    private var taken = false
    func claim() -> Bool { lock.withLock { defer { taken = true }; return !taken } }
}

/// Runs `body`, giving up (nil) after `seconds`.
func withTimeout<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async -> T) async -> T? {
    await withTaskGroup(of: T?.self) { g in
        g.addTask { await body() }
        g.addTask { try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9)); return nil }
        let first = await g.next() ?? nil
        g.cancelAll()
        return first
    }
}
