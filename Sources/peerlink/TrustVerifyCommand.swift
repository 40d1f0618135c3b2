import ArgumentParser
import Foundation
import PeerLink

extension TrustCommand {
    /// `peerlink trust verify PEER`: the code both owners compare, and recording a match.
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the verification code to compare with a peer's owner, and record a match.",
            discussion: """
            Both devices show the same 30-digit code for the pair: run `peerlink trust verify \
            <this node's ID>` on the other device and compare the two codes, face to face or \
            over the phone. Equal codes mean each device knows the other's real key; the peer \
            is then trusted, marked as verified by code, with the time. The code depends only \
            on the two keys, so it can be compared at any time, even with the peer out of range.
            """)
        @Argument(help: "The peer: its full 32-character ID, or the note or an ID prefix of a trusted peer.") var peer: String
        @Option(name: .long, help: "A note for the peer when it is not trusted yet, e.g. its name.") var note: String?
        @Flag(name: .long, help: "The codes matched: record the peer as verified without asking.") var confirm = false
        @OptionGroup var place: TrustCommand.Place
        @Flag(name: .long, help: "Print JSON (never asks; use --confirm to record).") var json = false

        func run() throws {
            let out = Output(json: json)
            let book = try place.book(out)
            let (me, target, code, existing) = try book.code(peer)
            out.emit("""
                verification code for this node (\(me.short)) and \(target)\(existing.map { $0.name.isEmpty ? "" : " (\($0.name))" } ?? ""):

                    \(code)

                On the other device run `peerlink trust verify \(me)` and compare.
                """, ["event": "code", "peer": target.description, "self": me.description, "code": code,
                      "trusted": existing != nil, "verification": existing?.verification?.rawValue ?? NSNull()])
            var matched = confirm
            if !confirm, !json, isatty(STDIN_FILENO) == 1 {
                print("Do the codes match exactly? [y/N] ", terminator: "")
                let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
                guard answer == "y" || answer == "yes" else {
                    print("Not recorded. If the codes differ, the ID you have is not the key on that device: "
                          + (existing != nil ? "remove it (`peerlink trust remove \(target)`) and " : "")
                          + "get the peer ID again from its owner (`peerlink id` there).")
                    throw ExitCode(1)
                }
                matched = true
            }
            guard matched else { return }
            try book.trust(target, note: existing?.name ?? note, verification: .code)
            out.emit("verified \(target) in \(book): trusted, codes compared", ["event": "verified", "peer": target.description])
        }
    }
}

/// Text shared by the trust commands.
enum TrustText {
    static func date(_ d: Date) -> String { d.formatted(.iso8601) }

    static func describe(_ v: TrustVerification, at: Date?) -> String {
        let when = at.map { " on \(date($0))" } ?? ""
        switch v {
        case .firstUse: return "accepted when it asked\(when), not verified (compare codes: peerlink trust verify)"
        case .peerID: return "added by its peer ID\(when)"
        case .code: return "verification codes compared\(when)"
        }
    }

    /// A full peer ID, or the one trusted peer whose name or ID prefix is `text`.
    static func resolve(_ text: String, in store: IdentityStore) throws -> PeerID {
        let (peer, hits) = store.resolveTrusted(text)
        if let peer { return peer }
        guard !hits.isEmpty else {
            throw ValidationError("'\(text)' is not a peer ID, nor the name or ID prefix (4+ characters) of a trusted peer (`peerlink trust list`)")
        }
        throw ValidationError("'\(text)' matches \(hits.count) trusted peers: \(hits.map { $0.peer.short }.joined(separator: ", ")); give more of the ID")
    }
}
