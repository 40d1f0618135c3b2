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
        @Argument(help: "The peer: its full 32-character ID, or the name or an ID prefix of a trusted peer.") var peer: String
        @Option(name: .long, help: "A note for the peer when it is not trusted yet, e.g. its name.") var note: String?
        @Flag(name: .long, help: "The codes matched: record the peer as verified without asking.") var confirm = false
        @Option(name: .long, help: "Directory holding the identity key and trust store.") var configDir: String?
        @Flag(name: .long, help: "Print JSON (never asks; use --confirm to record).") var json = false

        func run() throws {
            let store = IdentityStore(directory: configDir)
            let me = try store.loadOrCreate().identity.peerID
            let records = store.trustRecords()
            let target = try TrustText.resolve(peer, among: records)
            guard target != me else { throw ValidationError("\(peer) is this node's own ID: run the command on the other device with this ID") }
            let code = VerificationCode(me, target)
            let existing = records.first { $0.peer == target }
            let out = Output(json: json)
            out.emit("""
                verification code for this node (\(me.short)) and \(target)\(existing.map { $0.name.isEmpty ? "" : " (\($0.name))" } ?? ""):

                    \(code)

                On the other device run `peerlink trust verify \(me)` and compare.
                """, ["event": "code", "peer": target.description, "self": me.description, "code": code.description,
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
            try store.trust(target, name: existing?.name ?? note ?? "", verification: .code)
            out.emit("verified \(target): trusted, codes compared", ["event": "verified", "peer": target.description])
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
    static func resolve(_ text: String, among records: [TrustedPeer]) throws -> PeerID {
        if let id = try? PeerID(parsing: text) { return id }
        let lower = text.lowercased()
        let byName = records.filter { $0.name == text }
        let byPrefix = lower.count >= 4 ? records.filter { $0.peer.description.hasPrefix(lower) } : []
        let hits = byName.isEmpty ? byPrefix : byName
        guard !hits.isEmpty else {
            throw ValidationError("'\(text)' is not a peer ID, nor the name or ID prefix (4+ characters) of a trusted peer (`peerlink trust list`)")
        }
        guard hits.count == 1 else {
            throw ValidationError("'\(text)' matches \(hits.count) trusted peers: \(hits.map { $0.peer.short }.joined(separator: ", ")); give more of the ID")
        }
        return hits[0].peer
    }
}
