import Foundation
import PeerLinkWire
import PeerLink
import PeerLinkStore
import Synchronization

/// The daemon's local API, version 1 (docs/API.md; docs/api/openapi.json describes it): JSON
/// routes over `UnixHTTPServer`, errors as `{"error": {"code", "message"}}`.
public struct DaemonAPI: Sendable {
    /// Every route the API answers (method, path); the OpenAPI document lists exactly these.
    public static let routes: [(method: String, path: String)] = [
        ("GET", "/v1/status"),
        ("GET", "/v1/items"),
        ("POST", "/v1/items"),
        ("GET", "/v1/events"),
        ("GET", "/v1/pending"),
        ("POST", "/v1/pending/{peer}"),
        ("GET", "/v1/peers"),
        ("GET", "/v1/trust"),
        ("PUT", "/v1/trust/{peer}"),
        ("DELETE", "/v1/trust/{peer}"),
        ("GET", "/v1/trust/{peer}/code"),
        ("GET", "/v1/openapi.json"),
    ]

    /// The parameters of `path` when it matches `template` (a `{name}` segment matches one
    /// non-empty segment, percent-decoded), else nil.
    static func match(_ template: String, _ path: String) -> [String: String]? {
        let t = template.split(separator: "/", omittingEmptySubsequences: false)
        let p = path.split(separator: "/", omittingEmptySubsequences: false)
        guard t.count == p.count else { return nil }
        var parameters: [String: String] = [:]
        for (a, b) in zip(t, p) {
            if a.hasPrefix("{"), a.hasSuffix("}") {
                guard !b.isEmpty, let value = String(b).removingPercentEncoding else { return nil }
                parameters[String(a.dropFirst().dropLast())] = value
            } else if a != b {
                return nil
            }
        }
        return parameters
    }

    /// How long an idle event stream waits before it sends a keep-alive comment (which is also
    /// how a stream notices its client has gone).
    public var keepAlive: Duration = .seconds(15)

    let backend: any DaemonAPIBackend

    public init(backend: any DaemonAPIBackend) { self.backend = backend }

    /// Answers one request.
    public func handle(_ request: HTTPRequest, caller: PeerCredentials) async -> HTTPReply {
        let matching = Self.routes.compactMap { r in Self.match(r.path, request.path).map { (r.method, r.path, $0) } }
        let methods = matching.map(\.0)
        guard !methods.isEmpty else {
            return .response(.error(404, "not_found", "no route \(request.path); GET /v1/openapi.json lists the routes"))
        }
        guard methods.contains(request.method) else {
            var r = HTTPResponse.error(405, "method_not_allowed", "\(request.path) takes \(methods.joined(separator: ", ")), not \(request.method)")
            r.headers.append(("Allow", methods.joined(separator: ", ")))
            return .response(r)
        }
        let parameters = matching.first { $0.0 == request.method }?.2 ?? [:]
        let template = matching.first { $0.0 == request.method }?.1 ?? request.path
        do {
            switch (request.method, template) {
            case ("GET", "/v1/status"): return .response(try await status())
            case ("GET", "/v1/items"): return .response(try await items(request))
            case ("POST", "/v1/items"): return .response(try await submit(request, caller: caller))
            case ("GET", "/v1/events"): return try events(request)
            case ("GET", "/v1/pending"): return .response(await pending())
            case ("POST", "/v1/pending/{peer}"): return .response(try await answerPending(request, peer: parameters["peer"] ?? ""))
            case ("GET", "/v1/peers"): return .response(await peers())
            case ("GET", "/v1/trust"): return .response(try await trusted())
            case ("PUT", "/v1/trust/{peer}"): return .response(try await trust(request, peer: parameters["peer"] ?? ""))
            case ("DELETE", "/v1/trust/{peer}"): return .response(try await untrust(peer: parameters["peer"] ?? ""))
            case ("GET", "/v1/trust/{peer}/code"): return .response(try await verificationCode(peer: parameters["peer"] ?? ""))
            default: return .response(HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(OpenAPIDocument.json.utf8)))
            }
        } catch let e as APIError {
            return .response(e.response)
        } catch {
            return .response(.error(500, "internal", "\(error)"))
        }
    }

    // MARK: routes

    func status() async throws -> HTTPResponse {
        let s = try await backend.apiStatus()
        var counts: [String: Int] = [:]
        for state in OutboundItem.State.allCases { counts[state.rawValue] = s.items[state] ?? 0 }
        let events = backend.events
        let links = await backend.apiLinks()
        let peers = (try? JSONEncoder().encode(links.peers)).flatMap { try? JSONSerialization.jsonObject(with: $0) } ?? []
        return .json(200, [
            "api_version": 1, "pid": Int(getpid()),
            "links": ["policy": links.policy, "peers": peers],
            "peer": s.peer, "name": s.name, "service": s.service,
            "uptime_seconds": (s.uptimeSeconds * 1000).rounded() / 1000,
            "peers": s.peers.map { ["peer": $0.peer, "name": $0.name] },
            "items": counts,
            "inbox": s.inbox, "outbox": s.outbox,
            "events": ["oldest_id": events.oldestID, "last_id": events.nextID - 1],
        ])
    }

    func items(_ request: HTTPRequest) async throws -> HTTPResponse {
        var states: Set<OutboundItem.State> = [.queued, .sending]
        if let text = request.query["state"] {
            states = []
            for name in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let s = OutboundItem.State(rawValue: String(name)) else {
                    throw APIError(400, "bad_state", "state=\(name) is not a state; use some of: "
                                   + OutboundItem.State.allCases.map(\.rawValue).joined(separator: ","))
                }
                states.insert(s)
            }
        }
        let list = try await backend.apiItems(in: states)
        return .json(200, ["items": list.map(Self.json)])
    }

    static func json(_ i: OutboundItem) -> [String: Any] {
        var o: [String: Any] = [
            "id": i.id.description, "peer": i.peer.description, "kind": i.kind.rawValue, "size": i.size,
            "priority": i.priority, "created": rfc3339(i.created.millisecondsSince1970),
            "expires": rfc3339(i.expires.millisecondsSince1970), "state": i.state.rawValue,
            "acknowledged": i.acknowledged,
        ]
        o["reason"] = i.reason ?? NSNull()
        if case let .file(path) = i.payload { o["path"] = i.archivedPath ?? path }
        return o
    }

    func submit(_ request: HTTPRequest, caller: PeerCredentials) async throws -> HTTPResponse {
        let submission = try Self.submission(request.body)
        let item = try await backend.apiSubmit(submission, caller: caller)
        var r = HTTPResponse.json(201, ["item": Self.json(item)])
        r.headers.append(("Location", "/v1/items?id=\(item.id)"))
        return r
    }

    /// `POST /v1/items`'s body as sent.
    struct SubmissionBody: Decodable {
        enum TTL: Decodable {
            case text(String), seconds(Int)
            init(from decoder: Decoder) throws {
                let c = try decoder.singleValueContainer()
                if let n = try? c.decode(Int.self) { self = .seconds(n) } else { self = .text(try c.decode(String.self)) }
            }
        }
        var peer: String?
        var path: String?
        var message: String?
        var priority: Int?
        var ttl: TTL?
    }

    /// Reads and checks `POST /v1/items`'s body.
    static func submission(_ body: [UInt8]) throws(APIError) -> ItemSubmission {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)), let keys = (object as? [String: Any])?.keys else {
            throw APIError(400, "bad_json", "the body must be a JSON object")
        }
        let known: Set<String> = ["peer", "path", "message", "priority", "ttl"]
        if let unknown = keys.sorted().first(where: { !known.contains($0) }) {
            throw APIError(400, "bad_field", "unknown field '\(unknown)'; fields: peer, path or message, priority, ttl")
        }
        let o: SubmissionBody
        do {
            o = try JSONDecoder().decode(SubmissionBody.self, from: Data(body))
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.dataCorrupted(context) {
            let field = context.codingPath.first?.stringValue ?? "body"
            throw APIError(400, "bad_field", "'\(field)' has the wrong type: peer, path and message are strings, priority a whole number, ttl a duration (\"2d\") or seconds")
        } catch {
            throw APIError(400, "bad_json", "the body is not a valid item: \(error)")
        }
        guard let peer = o.peer, !peer.isEmpty else {
            throw APIError(400, "bad_field", "'peer' must be a peer ID, a unique ID prefix or a trusted name")
        }
        var message: [UInt8]?
        switch (o.path, o.message) {
        case (nil, let text?):
            let bytes = Array(text.utf8)
            guard !bytes.isEmpty, bytes.count <= StoreForwardRecord.maxMessage else {
                throw APIError(400, "bad_field", "'message' must be 1 to \(StoreForwardRecord.maxMessage) bytes of UTF-8; send larger content as a file ('path')")
            }
            message = bytes
        case (let path?, nil):
            guard path.hasPrefix("/") else { throw APIError(400, "bad_field", "'path' must be the absolute path of a file") }
        default:
            throw APIError(400, "bad_field", "give either 'path' (a file) or 'message' (text), not both")
        }
        let path = o.path ?? ""
        let priority = o.priority ?? 0
        guard (-1000...1000).contains(priority) else {
            throw APIError(400, "bad_field", "'priority' must be a whole number from -1000 to 1000 (higher goes first)")
        }
        var ttl: Int?
        switch o.ttl {
        case nil: break
        case let .text(s)?:
            guard let n = ConfigValues.seconds(s), n >= 1 else {
                throw APIError(400, "bad_field", "'ttl' = \"\(s)\" is not a duration; write e.g. \"90s\", \"2d\" or \"1d12h\"")
            }
            ttl = n
        case let .seconds(n)?:
            guard (1...100 * 365 * 86400).contains(n) else {
                throw APIError(400, "bad_field", "'ttl' in seconds must be a whole number from 1 to 100 years")
            }
            ttl = n
        }
        return ItemSubmission(peer: peer, path: path, message: message, priority: priority, ttlSeconds: ttl)
    }

    func events(_ request: HTTPRequest) throws -> HTTPReply {
        let events = backend.events
        var after = events.oldestID - 1
        if let text = request.query["after"] ?? request.header("last-event-id") {
            guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (48...57).contains($0) }), let n = UInt64(text) else {
                throw APIError(400, "bad_after", "after=\(text) is not an event ID (a whole number)")
            }
            after = n
        }
        if case let .failure(gone) = events.after(after) {
            return .response(.error(410, "gone", "events after \(after) are no longer held (or are from an earlier run of the daemon); "
                                    + "the oldest held is \(gone.oldest): resume with after=\(gone.oldest - 1) and reread /v1/items",
                                    extra: ["oldest_id": gone.oldest]))
        }
        let last = Mutex(after)
        let keepAlive = self.keepAlive
        let head = HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-store")])
        return .stream(head, next: {
            let from = last.withLock { $0 }
            guard from != UInt64.max else { return nil }
            switch await events.wait(after: from, timeout: keepAlive) {
            case let .success(list) where list.isEmpty:
                return Array(": keep-alive\n\n".utf8)
            case let .success(list):
                if let id = list.last?.id { last.withLock { $0 = id } }
                return list.flatMap(Self.sse)
            case let .failure(gone):
                // The reader fell more than the ring behind: say so, and end the stream.
                return last.withLock { l -> [UInt8]? in
                    guard l != UInt64.max else { return nil }
                    l = UInt64.max
                    return Array("event: gone\ndata: {\"oldest_id\":\(gone.oldest)}\n\n".utf8)
                }
            }
        })
    }

    /// One event as a Server-Sent Event: `id`, `event` (the kind) and one line of JSON data.
    static func sse(_ e: DaemonEvent) -> [UInt8] {
        var o: [String: Any] = ["id": e.id, "kind": e.kind.rawValue, "time": rfc3339(e.time)]
        if let v = e.peer { o["peer"] = v }
        if let v = e.name { o["name"] = v }
        if let v = e.item { o["item"] = v }
        if let v = e.path { o["path"] = v }
        if let v = e.size { o["size"] = v }
        if let v = e.reason { o["reason"] = v }
        let data = (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return Array("id: \(e.id)\nevent: \(e.kind.rawValue)\ndata: ".utf8) + Array(data) + Array("\n\n".utf8)
    }

    /// `2026-11-27T10:15:30.123Z`.
    static func rfc3339(_ ms: Int64) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}
