import ArgumentParser
import Foundation
import PeerLinkDaemon

/// `peerlink pending`: the running daemon's list of unknown peers that asked for a session
/// (`accept = "known"`), and the owner's answers to them (docs/DAEMON.md, "Pending peers").
struct PendingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pending",
        abstract: "List the peers waiting for your answer, and accept, decline or block them (through the daemon).",
        discussion: """
        A daemon with accept = "known" does not turn away a peer that is not in its trust store: \
        the peer's invitation waits here for as long as the peer waits (its invitation's \
        timeout, at most 5 minutes). A daemon that holds items for this node asks again every \
        10 s or so, so a peer stays listed (as not waiting) for 10 minutes after it last asked. \
        `peerlink pending accept PEER` adds the peer to the trust store and accepts its waiting \
        invitation (or its next one); `decline` declines it and takes it off the list until it \
        asks again; `block` declines it and all its later invitations without listing it again \
        (until `unblock`, or `peerlink trust add`). Works through the daemon's API socket, found \
        as `peerlink status` finds it.
        """,
        subcommands: [List.self, Accept.self, Decline.self, Block.self, Unblock.self], defaultSubcommand: List.self)

    struct SocketOption: ParsableArguments {
        @Option(name: .long, help: ArgumentHelp("The daemon's API socket (default: as `peerlink status` finds it).", valueName: "path"))
        var socket: String?
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the pending peers (first asked first).")
        @OptionGroup var socket: SocketOption
        @Flag(name: .long, help: "Print the daemon's answer as JSON ({\"pending\": [...]}).") var json = false

        func run() throws {
            let answer = try DaemonConnection(socket: socket.socket).json("GET", "/v1/pending")
            if json {
                let data = try JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys, .withoutEscapingSlashes])
                print(String(decoding: data, as: UTF8.self))
                return
            }
            let list = answer["pending"] as? [[String: Any]] ?? []
            if list.isEmpty { stderrLine("no peers are waiting for an answer") }
            for p in list { print(PendingCommand.line(p)) }
            for b in answer["blocked"] as? [[String: Any]] ?? [] {
                print("\(b["name"] as? String ?? "?") [\(b["peer"] as? String ?? "?")] blocked (peerlink pending unblock to list it again)")
            }
        }
    }

    struct Accept: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Trust a pending peer and accept its invitation.",
            discussion: "The peer is added to the trust store (as `peerlink trust add` does) under --name, else the name it gave; with --once it is not, and only its waiting invitation is accepted.")
        @OptionGroup var socket: SocketOption
        @Argument(help: "The pending peer: its ID, an ID prefix (4 or more characters) or its display name.") var peer: String
        @Option(name: .long, help: "The name to trust it under (default: the name it gave).") var name: String?
        @Flag(name: .long, help: "Accept its waiting invitation without trusting it (the daemon then takes no items from it).") var once = false
        @Flag(name: .long, help: "Print the daemon's answer as JSON.") var json = false

        func run() throws {
            var body: [String: Any] = ["answer": "accept", "trust": !once]
            if let name { body["name"] = name }
            try PendingCommand.answer(peer, body, socket: socket.socket, json: json)
        }
    }

    struct Decline: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Decline a pending peer's invitation and take it off the list.")
        @OptionGroup var socket: SocketOption
        @Argument(help: "The pending peer: its ID, an ID prefix (4 or more characters) or its display name.") var peer: String
        @Flag(name: .long, help: "Print the daemon's answer as JSON.") var json = false

        func run() throws { try PendingCommand.answer(peer, ["answer": "decline"], socket: socket.socket, json: json) }
    }

    struct Block: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decline a pending peer's invitation, and every later one without listing it.",
            discussion: "The peer goes on the daemon's block list (blocked-peers beside its trust store) and out of its trust store. `peerlink pending unblock` or `peerlink trust add` undoes it.")
        @OptionGroup var socket: SocketOption
        @Argument(help: "The pending peer: its ID, an ID prefix (4 or more characters) or its display name.") var peer: String
        @Flag(name: .long, help: "Print the daemon's answer as JSON.") var json = false

        func run() throws { try PendingCommand.answer(peer, ["answer": "block"], socket: socket.socket, json: json) }
    }

    struct Unblock: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Take a peer off the block list: it is listed again when it asks.")
        @OptionGroup var socket: SocketOption
        @Argument(help: "The blocked peer: its ID, an ID prefix (4 or more characters) or its name.") var peer: String
        @Flag(name: .long, help: "Print the daemon's answer as JSON.") var json = false

        func run() throws { try PendingCommand.answer(peer, ["answer": "unblock"], socket: socket.socket, json: json) }
    }

    static func answer(_ peer: String, _ body: [String: Any], socket: String?, json: Bool) throws {
        let escaped = peer.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? peer
        let o = try DaemonConnection(socket: socket).json("POST", "/v1/pending/" + escaped, body: body)
        if json {
            let data = try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        let who = "\(o["name"] as? String ?? "?") [\(o["peer"] as? String ?? "?")]"
        let answered = o["invitation_answered"] as? Bool ?? false
        if o["answer"] as? String == "blocked" {
            print("blocked \(who)" + (answered ? "" : " (its invitation had lapsed)") + "; its invitations are declined unasked")
        } else if o["answer"] as? String == "unblocked" {
            print("unblocked \(who); it is listed again when it asks")
        } else if o["answer"] as? String == "declined" {
            print("declined \(who)" + (answered ? "" : " (its invitation had lapsed)") + "; it is listed again if it asks again")
        } else if o["trusted"] as? Bool == true {
            print("trusted and accepted \(who)" + (answered ? "" : "; its invitation had lapsed, its next one is accepted"))
        } else {
            print("accepted \(who) for this session (not trusted)")
        }
    }

    /// One pending peer as a line: name [ID], asked N times since …, waiting (Ns left) or not.
    static func line(_ p: [String: Any]) -> String {
        let times = p["times_asked"] as? Int ?? 1
        var s = "\(p["name"] as? String ?? "?") [\(p["peer"] as? String ?? "?")] asked \(times == 1 ? "once" : "\(times) times")"
        s += " since \(p["first_asked"] as? String ?? "?")"
        if p["waiting"] as? Bool == true, let left = p["seconds_left"] as? Double {
            s += ", waiting (\(Int(left)) s left)"
        } else {
            s += ", not waiting now (asks again while it holds items for this node)"
        }
        if let c = p["context"] as? String, !c.isEmpty { s += ": \"\(c)\"" }
        return s
    }
}
