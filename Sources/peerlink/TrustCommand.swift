import ArgumentParser
import Foundation
import PeerLink

struct TrustCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Manage the peers that --accept-known (and a daemon's accept = \"known\") accepts.",
        discussion: """
        While a daemon runs here (its API socket answers, found as `peerlink status` finds it), \
        these commands act on the daemon's trust store, which lives with its key in its own \
        configuration directory; --config-dir acts on the store in that directory instead.
        """,
        subcommands: [Add.self, Remove.self, List.self, Verify.self], defaultSubcommand: List.self)

    /// Where a trust command acts, as its options say.
    struct Place: ParsableArguments {
        @Option(name: .long, help: "Act on the key and trust store in this directory, even when a daemon runs.") var configDir: String?
        @Option(name: .long, help: ArgumentHelp("The daemon's API socket (default: as `peerlink status` finds it).", valueName: "path"))
        var socket: String?

        func validate() throws {
            if configDir != nil, socket != nil { throw ValidationError("--config-dir acts on a directory, --socket on a daemon: give one") }
        }

        func book(_ out: Output) throws -> TrustBook { try TrustBook.open(configDir: configDir, socket: socket, out: out) }
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Trust a peer ID.")
        @Argument(help: "The full 32-character peer ID.") var peer: String
        @Argument(help: "A note, e.g. the peer's name.") var note: String = ""
        @OptionGroup var place: Place
        func run() throws {
            let id: PeerID
            do { id = try PeerID(parsing: peer) } catch { throw ValidationError("\(error)") }
            let book = try place.book(Output(json: false))
            try book.trust(id, note: note, verification: .peerID)
            print("trusted \(id) in \(book) (compare verification codes with `peerlink trust verify \(id)`)")
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop trusting a peer.")
        @Argument(help: "The full peer ID, or a trusted peer's note or ID prefix (4+ characters).") var peer: String
        @OptionGroup var place: Place
        func run() throws {
            let book = try place.book(Output(json: false))
            let id = try book.remove(peer)
            print("no longer trusted in \(book): \(id)")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List trusted peers, with when each was first trusted and how it was verified.")
        @OptionGroup var place: Place
        @Flag(name: .long, help: "Print JSON.") var json = false
        func run() throws {
            let out = Output(json: json)
            let book = try place.book(out)
            let all = try book.list()
            if all.isEmpty { out.note("no trusted peers in \(book) (add one with `peerlink trust add PEER-ID`)") }
            for p in all.sorted(by: { $0.peer < $1.peer }) {
                let since = p.firstSeen.map { "since \(TrustText.date($0))" } ?? "since before first-seen times were kept"
                let how = p.verification.map { TrustText.describe($0, at: p.verifiedAt) } ?? "verification not recorded"
                var object: [String: Any] = ["peer": p.peer.description, "note": p.name]
                if let t = p.firstSeen { object["firstSeen"] = TrustText.date(t) }
                if let v = p.verification { object["verification"] = v.rawValue }
                if let t = p.verifiedAt { object["verifiedAt"] = TrustText.date(t) }
                out.emit("\(p.peer) \(p.name)\n    \(since); \(how)", object)
            }
        }
    }
}
