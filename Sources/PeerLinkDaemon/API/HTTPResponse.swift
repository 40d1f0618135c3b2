import Foundation

/// An HTTP/1.1 response of the daemon's API: a status, header fields and a body, written with
/// `Content-Length` and `Connection: close`.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status; self.headers = headers; self.body = body
    }

    /// A JSON body from a `JSONSerialization` value (sorted keys, so answers are stable).
    public static func json(_ status: Int, _ object: Any) -> HTTPResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: Array(data) + [10])
    }

    /// `{"error": {"code": code, "message": message}}` (and `extra`'s keys beside them).
    public static func error(_ status: Int, _ code: String, _ message: String, extra: [String: Any] = [:]) -> HTTPResponse {
        var e: [String: Any] = ["code": code, "message": message]
        for (k, v) in extra { e[k] = v }
        return json(status, ["error": e])
    }

    /// The status line and header section (no `Content-Length` when `length` is nil: the body
    /// then ends when the connection closes, as the event stream's does).
    public func head(length: Int?) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        for (n, v) in headers { text += "\(n): \(v)\r\n" }
        if let length { text += "Content-Length: \(length)\r\n" }
        text += "Connection: close\r\n\r\n"
        return Array(text.utf8)
    }

    /// Head and body, ready to write.
    public var serialized: [UInt8] { head(length: body.count) + body }

    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 400: return "Bad Request"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 422: return "Unprocessable Content"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Status"
        }
    }
}

/// What a route answers: a whole response, or a stream (the event stream) whose head is
/// written first and whose body is each chunk `next` returns until nil; the connection then
/// closes.
public enum HTTPReply: Sendable {
    case response(HTTPResponse)
    case stream(HTTPResponse, next: @Sendable () async -> [UInt8]?)
}
