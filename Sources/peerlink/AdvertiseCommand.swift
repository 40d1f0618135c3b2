import ArgumentParser
import Foundation
import PeerLink
import PeerLinkDaemon

struct AdvertiseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertise",
        abstract: "Make this node discoverable and answer invitations.",
        discussion: """
        Publishes the service with the given discovery info and keeps running: invitations are \
        answered (asking on the terminal unless --accept-all or --accept-known), and messages \
        from connected peers are printed. Files offered are declined; use `peerlink receive` \
        to accept files.
        """)

    @OptionGroup var node: NodeOptions
    @OptionGroup var accept: AcceptOptions

    @Option(name: .long, help: ArgumentHelp("Discovery info entry, key=value (repeatable; each ≤ 255 bytes, all ≤ 400 bytes).", valueName: "key=value"))
    var info: [String] = []

    func run() async throws {
        let discoveryInfo: DiscoveryInfo
        do { discoveryInfo = try DiscoveryInfo(arguments: info) } catch { throw ValidationError("--info: \(error)") }
        let host = try await Hosting.start(node, command: "advertise", info: discoveryInfo, accept: accept)
        let names = NameBook()
        for await e in host.session.events {
            printCommon(e, names: names, out: host.output)
            if case let .resourceOffered(offer) = e {
                host.output.emit("declined file '\(offer.name)' from \(names.name(offer.peer)) (use `peerlink receive` to accept files)",
                                 ["event": "resource-declined", "peer": offer.peer.description, "name": offer.name])
                await host.session.decline(offer)
            }
        }
    }
}

struct ReceiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract: "Advertise and receive files into a directory.",
        discussion: """
        Files arrive under a temporary name in DIR/.peerlink-partial and are moved to their \
        final name only after their SHA-256 matched the sender's. An interrupted transfer \
        resumes from where it stopped when the same file is sent again.
        """)

    @OptionGroup var node: NodeOptions
    @OptionGroup var accept: AcceptOptions

    @Option(name: .long, help: "Directory for received files (created if missing).")
    var dir: String

    @Option(name: .long, help: "Exit after this many files were received and verified.")
    var count: Int?

    @Option(name: .long, help: ArgumentHelp("Discovery info entry, key=value (repeatable).", valueName: "key=value"))
    var info: [String] = []

    @Option(name: .long, help: ArgumentHelp("Free space to leave on DIR's file system: an offer that would eat into it is refused, and the sender is told why. Bytes, or with K, M, G (powers of 1024); 0 for none.", valueName: "size"))
    var keepFree: String = "64M"

    func validate() throws {
        guard ConfigValues.bytes(keepFree) != nil else {
            throw ValidationError("--keep-free '\(keepFree)' is not a size; use bytes or a number with K, M or G, e.g. 64M")
        }
    }

    func run() async throws {
        let keep = ConfigValues.bytes(keepFree) ?? Session.defaultKeepFree
        let discoveryInfo: DiscoveryInfo
        do { discoveryInfo = try DiscoveryInfo(arguments: info) } catch { throw ValidationError("--info: \(error)") }
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw ValidationError("--dir: cannot create \(dir): \(error.localizedDescription)")
        }
        let host = try await Hosting.start(node, command: "receive", info: discoveryInfo, accept: accept)
        let out = host.output
        let names = NameBook()
        var done = 0
        var bars: [String: ProgressBar] = [:]
        for await e in host.session.events {
            printCommon(e, names: names, out: out)
            switch e {
            case let .resourceOffered(offer):
                out.emit("receiving '\(offer.name)' (\(bytes(offer.size))) from \(names.name(offer.peer))",
                         ["event": "offer", "peer": offer.peer.description, "name": offer.name, "size": offer.size])
                do {
                    try await host.session.accept(offer, into: dir, keepingFree: keep)
                } catch let PeerLinkError.resourceRefused(name, reason) {
                    // The reason names the margin kept (--keep-free), in the words the sender shows.
                    out.emit("refused '\(name)' from \(names.name(offer.peer)): \(reason); the sender was told",
                             ["event": "refused", "peer": offer.peer.description, "name": name, "reason": "\(reason)", "keepFree": keep])
                } catch {
                    out.emit("cannot accept '\(offer.name)': \(error)", ["event": "error", "text": "\(error)"])
                    await host.session.decline(offer)
                }
            case let .resourceProgress(p):
                if out.json { out.emit("", progressJSON(p)) } else {
                    let bar = bars[p.name] ?? ProgressBar(label: p.name)
                    bars[p.name] = bar
                    bar.update(p)
                }
            case let .resourceFinished(p, path, error) where p.direction == .receiving:
                bars[p.name] = nil
                if let path {
                    done += 1
                    out.emit("received '\(p.name)' → \(path) (\(bytes(p.total)), SHA-256 verified)",
                             ["event": "received", "peer": p.peer.description, "name": p.name, "path": path, "size": p.total, "verified": true])
                } else {
                    let why = error.map(String.init(describing:))
                    out.emit("'\(p.name)' failed: \(why ?? "unknown error")",
                             ["event": "failed", "peer": p.peer.description, "name": p.name, "error": why ?? "", "completed": p.completed])
                }
                if let count, done >= count {
                    try? await Task.sleep(nanoseconds: 300_000_000)  // let the verdict reach the sender
                    await host.finish()
                    return
                }
            default:
                break
            }
        }
    }
}
