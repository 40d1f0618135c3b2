import Foundation
import PeerLink
import PeerLinkCore
import PeerLinkWire

/// `/v1/trust`: the daemon's trust store (the peers `accept = "known"` takes) and the
/// verification code between the daemon's node and a peer, so that `peerlink trust` acts on
/// the node's own store while a daemon runs (its key and store live in the daemon's config
/// directory, not the caller's).
extension DaemonAPI {
    func trusted() async throws -> HTTPResponse {
        let store = backend.trustStore
        let records = try await Runtime.offload("pl.api.trust") { store.trustRecords() }
        return .json(200, ["trusted": records.sorted { $0.peer < $1.peer }.map(Self.json)])
    }

    static func json(_ p: TrustedPeer) -> [String: Any] {
        ["peer": p.peer.description, "note": p.name,
         "first_seen": p.firstSeen.map(rfc3339) ?? NSNull(),
         "verification": p.verification?.rawValue ?? NSNull(),
         "verified_at": p.verifiedAt.map(rfc3339) ?? NSNull()]
    }

    static func rfc3339(_ d: Date) -> String { rfc3339(Int64((d.timeIntervalSince1970 * 1000).rounded())) }

    /// `PUT /v1/trust/{peer}`: trusts a full peer ID, with a note and how it was verified.
    func trust(_ request: HTTPRequest, peer text: String) async throws -> HTTPResponse {
        guard let peer = try? PeerID(parsing: text) else {
            throw APIError(400, "bad_peer", "'\(text)' is not a full 32-character peer ID: trust takes the whole ID (`peerlink id` on the peer)")
        }
        let (note, verification) = try Self.trustBody(request.body)
        let store = backend.trustStore
        let record: TrustedPeer? = try await Runtime.offload("pl.api.trust") {
            do {
                let old = store.trustRecords().first { $0.peer == peer }
                try store.trust(peer, name: note ?? old?.name ?? "", verification: verification)
            } catch {
                throw APIError(500, "trust_store", "the trust store could not be written: \(error)")
            }
            return store.trustRecords().first { $0.peer == peer }
        }
        guard let record else { throw APIError(500, "trust_store", "\(peer) is not in the trust store after writing it") }
        return .json(200, Self.json(record))
    }

    /// Reads and checks `PUT /v1/trust/{peer}`'s body (it may be empty).
    static func trustBody(_ body: [UInt8]) throws(APIError) -> (note: String?, verification: TrustVerification) {
        guard !body.isEmpty else { return (nil, .peerID) }
        guard let o = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw APIError(400, "bad_json", "the body must be a JSON object such as {\"note\": \"field laptop\"}")
        }
        if let unknown = o.keys.sorted().first(where: { !["note", "verification"].contains($0) }) {
            throw APIError(400, "bad_field", "unknown field '\(unknown)'; fields: note, verification (peer-id or code)")
        }
        var note: String?
        if let n = o["note"] {
            guard let s = n as? String, s.utf8.count <= 200, !s.contains("\n") else {
                throw APIError(400, "bad_field", "'note' must be one line of text (at most 200 bytes)")
            }
            note = s
        }
        var verification = TrustVerification.peerID
        if let v = o["verification"] {
            guard let s = v as? String, let parsed = TrustVerification(rawValue: s), parsed != .firstUse else {
                throw APIError(400, "bad_field", "'verification' must be \"peer-id\" (the whole ID was given) or \"code\" (verification codes compared)")
            }
            verification = parsed
        }
        return (note, verification)
    }

    /// `DELETE /v1/trust/{peer}`: a full ID, or a trusted peer's note or unique ID prefix.
    func untrust(peer text: String) async throws -> HTTPResponse {
        let store = backend.trustStore
        let peer = try await Self.resolve(text, in: store)
        try await Runtime.offload("pl.api.trust") {
            guard store.trustRecords().contains(where: { $0.peer == peer }) else {
                throw APIError(404, "not_trusted", "\(peer) is not in the trust store")
            }
            do { try store.untrust(peer) } catch { throw APIError(500, "trust_store", "the trust store could not be written: \(error)") }
        }
        return .json(200, ["peer": peer.description, "removed": true])
    }

    /// `GET /v1/trust/{peer}/code`: the code the two owners compare (docs/PROTOCOL.md §17).
    func verificationCode(peer text: String) async throws -> HTTPResponse {
        let store = backend.trustStore
        let peer = try await Self.resolve(text, in: store)
        let me: PeerID
        do { me = try store.loadOrCreate().identity.peerID } catch {
            throw APIError(500, "identity", "the node's key could not be read: \(error)")
        }
        guard peer != me else { throw APIError(400, "bad_peer", "\(peer) is the daemon's own ID") }
        let record = store.trustRecords().first { $0.peer == peer }
        return .json(200, ["self": me.description, "peer": peer.description, "code": VerificationCode(me, peer).description,
                           "trusted": record != nil, "verification": record?.verification?.rawValue ?? NSNull()])
    }

    static func resolve(_ text: String, in store: IdentityStore) async throws -> PeerID {
        try await Runtime.offload("pl.api.trust") {
            let (peer, hits) = store.resolveTrusted(text)
            if let peer { return peer }
            guard !hits.isEmpty else {
                throw APIError(404, "not_trusted", "'\(text)' is not a peer ID, nor the note or ID prefix (4+ characters) of a trusted peer")
            }
            throw APIError(409, "ambiguous", "'\(text)' matches \(hits.count) trusted peers: \(hits.map(\.peer.description).joined(separator: ", "))")
        }
    }
}
