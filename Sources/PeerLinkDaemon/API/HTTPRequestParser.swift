/// One HTTP/1.1 request as the daemon's API reads it.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The request target as sent (`/v1/items?state=queued`).
    public var target: String
    /// The target's path, percent-decoding not applied (the API's paths need none).
    public var path: String
    /// The query's `name=value` pairs, percent-decoded (`+` is a space); the last value of a
    /// repeated name wins.
    public var query: [String: String]
    /// Header fields in order, names lowercased, values with surrounding spaces removed.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    /// The value of the header `name` (lowercase), if sent once or more (the first).
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.method == b.method && a.target == b.target && a.query == b.query && a.body == b.body
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }
}

/// Why a request was refused, with the status to answer.
public struct HTTPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    public let status: Int
    public let message: String
    public var description: String { "\(status): \(message)" }

    static func bad(_ m: String) -> HTTPParseError { HTTPParseError(status: 400, message: m) }
}

/// A strict, sans-I/O HTTP/1.1 request reader: feed it the bytes read from a connection; it
/// returns the request once the header section and the `Content-Length` body are in.
///
/// Strict on purpose (RFC 9112, no leniency that lets two readers disagree): lines end in
/// CRLF (a bare LF or CR is refused); no empty lines before the request line; the request line
/// is `METHOD SP /target SP HTTP/1.1` (or `HTTP/1.0`); header names are tokens with no space
/// before the colon; folded lines, control characters, `Transfer-Encoding` (no chunked
/// bodies), and more than one `Content-Length` (even when equal) are refused; HTTP/1.1 needs
/// exactly one `Host`. Limits: the header section (request line included), the number of
/// header fields and the body.
public struct HTTPRequestParser: Sendable {
    public struct Limits: Sendable, Equatable {
        public var headerBytes = 16 * 1024
        public var headerCount = 64
        public var bodyBytes = 1 << 20
        public init() {}
    }

    public let limits: Limits
    private var buffer: [UInt8] = []
    /// The parsed head once the blank line was seen, and how many body bytes it wants.
    private var head: (request: HTTPRequest, bodyStart: Int, length: Int)?

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Adds `bytes`; returns the request when complete, nil when more bytes are needed.
    /// Bytes after the request (pipelining) are ignored: the server closes after answering.
    public mutating func push(_ bytes: some Collection<UInt8>) throws(HTTPParseError) -> HTTPRequest? {
        buffer.append(contentsOf: bytes)
        if head == nil {
            guard let end = Self.headerEnd(buffer, from: max(0, buffer.count - bytes.count - 3)) else {
                if buffer.count > limits.headerBytes {
                    throw HTTPParseError(status: 431, message: "the header section is over \(limits.headerBytes) bytes")
                }
                try Self.rejectBareLineEnds(buffer)
                return nil
            }
            guard end <= limits.headerBytes else {
                throw HTTPParseError(status: 431, message: "the header section is over \(limits.headerBytes) bytes")
            }
            head = try parseHead(Array(buffer[..<(end - 4)]), bodyStart: end)
        }
        guard let (request, start, length) = head, buffer.count - start >= length else { return nil }
        var r = request
        r.body = Array(buffer[start..<(start + length)])
        return r
    }

    /// Index just past the first CRLF CRLF at or after `from`.
    static func headerEnd(_ b: [UInt8], from: Int) -> Int? {
        var i = from
        while i + 3 < b.count {
            if b[i] == 13, b[i + 1] == 10, b[i + 2] == 13, b[i + 3] == 10 { return i + 4 }
            i += 1
        }
        return nil
    }

    /// Refuses an LF not after a CR, or a CR not before an LF, in the bytes so far (the last
    /// byte may be a CR whose LF has not come yet).
    static func rejectBareLineEnds(_ b: [UInt8]) throws(HTTPParseError) {
        for (i, c) in b.enumerated() {
            if c == 10, i == 0 || b[i - 1] != 13 { throw .bad("a line ends in a bare LF (lines end in CRLF)") }
            if c == 13, i + 1 < b.count, b[i + 1] != 10 { throw .bad("a bare CR (lines end in CRLF)") }
        }
    }

    private func parseHead(_ bytes: [UInt8], bodyStart: Int) throws(HTTPParseError) -> (HTTPRequest, Int, Int) {
        // With the CRLF that ended the last line: a CR at the very end is bare too.
        try Self.rejectBareLineEnds(bytes + [13, 10])
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        for i in bytes.indices where bytes[i] == 13 {
            lines.append(bytes[start..<i])
            start = i + 2
        }
        lines.append(bytes[start...])
        guard let first = lines.first, !first.isEmpty else { throw .bad("no request line (empty lines before it are not allowed)") }
        let (method, target, version) = try Self.requestLine(first)
        guard lines.count - 1 <= limits.headerCount else {
            throw HTTPParseError(status: 431, message: "more than \(limits.headerCount) header fields")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() { headers.append(try Self.field(line)) }

        let lengths = headers.filter { $0.name == "content-length" }
        if headers.contains(where: { $0.name == "transfer-encoding" }) {
            if !lengths.isEmpty { throw .bad("both Transfer-Encoding and Content-Length") }
            throw HTTPParseError(status: 501, message: "Transfer-Encoding is not supported; send a Content-Length body")
        }
        guard lengths.count <= 1 else { throw .bad("more than one Content-Length") }
        var length = 0
        if let text = lengths.first?.value {
            guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (48...57).contains($0) }), let n = Int(text) else {
                throw .bad("Content-Length is not a number of bytes")
            }
            length = n
        }
        guard length <= limits.bodyBytes else {
            throw HTTPParseError(status: 413, message: "the body is over \(limits.bodyBytes) bytes")
        }
        let hosts = headers.filter { $0.name == "host" }.count
        if version == "HTTP/1.1", hosts != 1 { throw .bad("an HTTP/1.1 request needs exactly one Host header") }
        if hosts > 1 { throw .bad("more than one Host header") }

        let (path, query) = try Self.splitTarget(target)
        return (HTTPRequest(method: method, target: target, path: path, query: query, headers: headers, body: []), bodyStart, length)
    }

    static func isTokenByte(_ c: UInt8) -> Bool {
        switch c {
        case 48...57, 65...90, 97...122: return true
        default: return Array("!#$%&'*+-.^_`|~".utf8).contains(c)
        }
    }

    static func requestLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> (String, String, String) {
        let parts = line.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .bad("the request line is not METHOD SP TARGET SP VERSION") }
        let method = parts[0], target = parts[1], version = String(decoding: parts[2], as: UTF8.self)
        guard !method.isEmpty, method.count <= 16, method.allSatisfy({ (65...90).contains($0) }) else {
            throw .bad("the method is not an upper-case token")
        }
        guard target.first == UInt8(ascii: "/"), target.count <= 8192, target.allSatisfy({ (33...126).contains($0) }) else {
            throw .bad("the target is not an absolute path of visible ASCII")
        }
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            if version.hasPrefix("HTTP/") { throw HTTPParseError(status: 505, message: "only HTTP/1.1 is served") }
            throw .bad("the request line's version is not HTTP/1.1")
        }
        return (String(decoding: method, as: UTF8.self), String(decoding: target, as: UTF8.self), version)
    }

    static func field(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> (name: String, value: String) {
        guard let first = line.first else { throw .bad("an empty header line") }
        if first == 32 || first == 9 { throw .bad("folded header lines are not allowed") }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw .bad("a header line without a colon") }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
            throw .bad("a header name that is not a token (no space before the colon)")
        }
        var value = line[(colon + 1)...]
        while let f = value.first, f == 32 || f == 9 { value = value.dropFirst() }
        while let l = value.last, l == 32 || l == 9 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 9 || (32...126).contains($0) || $0 >= 128 }), !value.contains(127) else {
            throw .bad("a control character in a header value")
        }
        return (String(decoding: name, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self))
    }

    static func splitTarget(_ target: String) throws(HTTPParseError) -> (String, [String: String]) {
        guard let q = target.firstIndex(of: "?") else { return (target, [:]) }
        var query: [String: String] = [:]
        for pair in target[target.index(after: q)...].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = percentDecoded(kv[0]), let value = percentDecoded(kv.count > 1 ? kv[1] : "") else {
                throw .bad("the query has a bad percent-encoding")
            }
            query[key] = value
        }
        return (String(target[..<q]), query)
    }

    static func percentDecoded(_ s: Substring) -> String? {
        var out: [UInt8] = []
        var it = Array(s.utf8)[...]
        while let c = it.popFirst() {
            if c == UInt8(ascii: "+") { out.append(32); continue }
            guard c == UInt8(ascii: "%") else { out.append(c); continue }
            guard let h = it.popFirst(), let l = it.popFirst(), let hi = hex(h), let lo = hex(l) else { return nil }
            out.append(hi << 4 | lo)
        }
        return String(validating: out, as: UTF8.self)
    }

    static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 65...70: return c - 55
        case 97...102: return c - 87
        default: return nil
        }
    }
}
