import Foundation
import PeerLink

/// The owner's answer to a pending peer (`POST /v1/pending/{peer}`).
public enum PendingAnswer: Sendable, Equatable {
    /// Accept its waiting invitation; with `trust`, add it to the trust store first (under
    /// `name`, else the name it gave), so its later invitations and items are taken too.
    case accept(trust: Bool, name: String?)
    /// Decline its waiting invitation and take it off the list (it is listed again when it asks again).
    case decline
    /// Decline its waiting invitation and every later one without listing it (`blocked-peers`);
    /// it also leaves the trust store.
    case block
    /// Take a blocked peer (ID, ID prefix or name) off the block list: it is listed again when it asks.
    case unblock
}

/// What an answer did.
public struct PendingOutcome: Sendable, Equatable {
    public var peer: String
    public var name: String
    /// "accepted" or "declined".
    public var answer: String
    /// The peer is in the trust store now.
    public var trusted: Bool
    /// An invitation was waiting and got the answer now (false: it had lapsed; a trusted
    /// peer's next invitation is accepted by the trust rule).
    public var invitationAnswered: Bool

    public init(peer: String, name: String, answer: String, trusted: Bool, invitationAnswered: Bool) {
        self.peer = peer; self.name = name; self.answer = answer; self.trusted = trusted; self.invitationAnswered = invitationAnswered
    }
}

/// `GET /v1/pending` and `POST /v1/pending/{peer}`.
extension DaemonAPI {
    func pending() async -> HTTPResponse {
        let list = await backend.apiPending()
        let store = backend.trustStore
        let blocked = (try? await Runtime.offload("pl.api.blocked") { store.blockedPeers() }) ?? [:]
        return .json(200, ["pending": list.map(Self.json),
                           "blocked": blocked.keys.sorted().map { ["peer": $0.description, "name": blocked[$0] ?? ""] }])
    }

    static func json(_ p: PendingPeer) -> [String: Any] {
        ["peer": p.peer.description, "name": p.name, "context": p.context,
         "first_asked": rfc3339(p.firstAsked), "last_asked": rfc3339(p.lastAsked), "times_asked": p.timesAsked,
         "waiting": p.waiting, "seconds_left": p.secondsLeft.map { ($0 * 10).rounded() / 10 } ?? NSNull()]
    }

    func answerPending(_ request: HTTPRequest, peer: String) async throws -> HTTPResponse {
        let answer = try Self.pendingAnswer(request.body)
        let o = try await backend.apiAnswerPending(peer, answer)
        return .json(200, ["peer": o.peer, "name": o.name, "answer": o.answer, "trusted": o.trusted,
                           "invitation_answered": o.invitationAnswered])
    }

    /// Reads and checks `POST /v1/pending/{peer}`'s body.
    static func pendingAnswer(_ body: [UInt8]) throws(APIError) -> PendingAnswer {
        guard let o = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw APIError(400, "bad_json", "the body must be a JSON object such as {\"answer\": \"accept\"}")
        }
        let known: Set<String> = ["answer", "trust", "name"]
        if let unknown = o.keys.sorted().first(where: { !known.contains($0) }) {
            throw APIError(400, "bad_field", "unknown field '\(unknown)'; fields: answer (accept, decline, block or unblock), trust, name")
        }
        struct Body: Decodable { var answer: String?; var trust: Bool?; var name: String? }
        let b: Body
        do {
            b = try JSONDecoder().decode(Body.self, from: Data(body))
        } catch {
            throw APIError(400, "bad_field", "wrong type: 'answer' and 'name' are strings, 'trust' is true or false")
        }
        if let s = b.name, s.isEmpty || s.utf8.count > 200 || s.contains("\n") {
            throw APIError(400, "bad_field", "'name' must be a non-empty line of text (at most 200 bytes)")
        }
        let trust = b.trust ?? true, name = b.name
        switch b.answer {
        case "accept"?: return .accept(trust: trust, name: name)
        case let other? where ["decline", "block", "unblock"].contains(other):
            guard name == nil, b.trust == nil else {
                throw APIError(400, "bad_field", "'trust' and 'name' go with \"accept\" only")
            }
            return other == "decline" ? .decline : other == "block" ? .block : .unblock
        default:
            throw APIError(400, "bad_field", "'answer' must be \"accept\", \"decline\", \"block\" or \"unblock\"")
        }
    }
}
