import ArgumentParser
import Foundation
import PeerLink
import PeerLinkDaemon

/// Where `peerlink trust` reads and writes: a running daemon's store, through its API (the
/// daemon's key and store live in its own configuration directory), or a store on disk.
enum TrustBook: CustomStringConvertible {
    case daemon(DaemonConnection)
    case local(IdentityStore)

    /// The daemon's store when one answers and no directory was named; else the directory's
    /// (by default this user's). A daemon that refuses this user is said so on stderr.
    static func open(configDir: String?, socket: String?, out: Output) throws -> TrustBook {
        if let configDir { return .local(IdentityStore(directory: configDir)) }
        let daemon = DaemonConnection(socket: socket)
        switch daemon.probe() {
        case .running: return .daemon(daemon)
        case .absent:
            if socket != nil { throw RuntimeFailure("no daemon answers on \(daemon.socketPath)") }
            return .local(IdentityStore())
        case let .refused(why):
            if socket != nil { throw RuntimeFailure(why) }
            out.note("note: \(why); using your own trust store instead")
            return .local(IdentityStore())
        }
    }

    var description: String {
        switch self {
        case let .daemon(d): return "the daemon's trust store (\(d.socketPath))"
        case let .local(s): return "the trust store in \(s.directory)"
        }
    }

    func list() throws -> [TrustedPeer] {
        switch self {
        case let .local(store): return store.trustRecords()
        case let .daemon(d):
            let answer = try d.json("GET", "/v1/trust")
            return ((answer["trusted"] as? [[String: Any]]) ?? []).compactMap(Self.record)
        }
    }

    func trust(_ peer: PeerID, note: String?, verification: TrustVerification) throws {
        switch self {
        case let .local(store):
            let old = store.trustRecords().first { $0.peer == peer }
            try store.trust(peer, name: note ?? old?.name ?? "", verification: verification)
        case let .daemon(d):
            var body: [String: Any] = ["verification": verification.rawValue]
            if let note { body["note"] = note }
            _ = try d.json("PUT", "/v1/trust/\(peer)", body: body)
        }
    }

    /// Removes the peer named by `text` (full ID, or a trusted peer's note or ID prefix).
    func remove(_ text: String) throws -> PeerID {
        switch self {
        case let .local(store):
            let peer = try TrustText.resolve(text, in: store)
            guard store.trustRecords().contains(where: { $0.peer == peer }) else { throw RuntimeFailure("\(peer) is not in \(self)") }
            try store.untrust(peer)
            return peer
        case let .daemon(d):
            let answer = try d.json("DELETE", "/v1/trust/\(Self.escaped(text))")
            guard let id = (answer["peer"] as? String).flatMap({ try? PeerID(parsing: $0) }) else {
                throw RuntimeFailure("the daemon's answer names no peer")
            }
            return id
        }
    }

    /// This node's ID, the peer named by `text`, their verification code, and the peer's
    /// entry when it is trusted.
    func code(_ text: String) throws -> (me: PeerID, peer: PeerID, code: String, entry: TrustedPeer?) {
        switch self {
        case let .local(store):
            let me = try store.loadOrCreate().identity.peerID
            let peer = try TrustText.resolve(text, in: store)
            guard peer != me else { throw ValidationError("\(text) is this node's own ID: run the command on the other device with this ID") }
            return (me, peer, VerificationCode(me, peer).description, store.trustRecords().first { $0.peer == peer })
        case let .daemon(d):
            let answer = try d.json("GET", "/v1/trust/\(Self.escaped(text))/code")
            guard let me = (answer["self"] as? String).flatMap({ try? PeerID(parsing: $0) }),
                  let peer = (answer["peer"] as? String).flatMap({ try? PeerID(parsing: $0) }),
                  let code = answer["code"] as? String else { throw RuntimeFailure("the daemon's answer has no code") }
            let entry = try list().first { $0.peer == peer }
            return (me, peer, code, entry)
        }
    }

    static func escaped(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    /// A `TrustedPeer` from the API's JSON (docs/api/openapi.json, TrustedPeer).
    static func record(_ o: [String: Any]) -> TrustedPeer? {
        guard let peer = (o["peer"] as? String).flatMap({ try? PeerID(parsing: $0) }) else { return nil }
        func date(_ key: String) -> Date? { (o[key] as? String).flatMap { try? Date($0, strategy: .iso8601) } }
        return TrustedPeer(peer: peer, name: o["note"] as? String ?? "", firstSeen: date("first_seen"),
                           verification: (o["verification"] as? String).flatMap(TrustVerification.init(rawValue:)),
                           verifiedAt: date("verified_at"))
    }
}
