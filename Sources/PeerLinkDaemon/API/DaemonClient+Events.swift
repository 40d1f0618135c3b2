import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension DaemonClient {
    /// One event of `GET /v1/events`, as its JSON data line gives it.
    public struct StreamEvent: Sendable, Equatable, Decodable {
        public let id: UInt64
        /// The event's kind (`item.delivered`, …; `DaemonEvent.Kind`'s raw values).
        public let kind: String
        public var peer: String?
        public var name: String?
        public var item: String?
        public var path: String?
        public var size: UInt64?
        public var reason: String?
    }

    /// Why following the event stream stopped before the handler was done.
    public enum StreamEnd: Error, CustomStringConvertible {
        /// Events after the one asked for are no longer held: reread the state, then resume
        /// after `oldest - 1`.
        case gone(oldest: UInt64)
        /// The daemon answered with an error instead of a stream.
        case refused(status: Int, message: String)
        /// The connection closed or went silent (no keep-alive within the idle limit).
        case lost(String)

        public var description: String {
            switch self {
            case let .gone(oldest): "events were missed (the oldest held is \(oldest))"
            case let .refused(status, message): "the daemon answered \(status): \(message)"
            case let .lost(why): "the event stream ended: \(why)"
            }
        }
    }

    /// Follows the daemon's events after the one with ID `after`, calling `handle` with each
    /// in order until it returns false; returns the ID of the last event handled. Blocking.
    /// `idle` is how long the stream may stay silent: the daemon sends a keep-alive every 15 s.
    public func follow(after: UInt64, idle: Duration = .seconds(40), _ handle: (StreamEvent) throws -> Bool) throws -> UInt64 {
        let fd = try connect()
        defer { close(fd) }
        UnixSocket.setTimeouts(fd, receive: idle, send: timeout)
        let head = "GET /v1/events?after=\(after) HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n"
        guard UnixSocket.writeAll(fd, Array(head.utf8)) else { throw UnixSocket.failure("cannot write to \(socketPath)") }
        var bytes: [UInt8] = [], start = 0, body: Int?
        var last = after
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw StreamEnd.lost(errno == EAGAIN ? "no keep-alive within \(idle)" : String(cString: strerror(errno))) }
            if n == 0 {
                if body == nil, let end = HTTPRequestParser.headerEnd(bytes, from: 0) { try Self.refusal(bytes, end) }
                throw StreamEnd.lost("the daemon closed it")
            }
            bytes += buffer[..<n]
            if body == nil {
                guard let end = HTTPRequestParser.headerEnd(bytes, from: 0) else { continue }
                let statusLine = String(decoding: bytes.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
                guard statusLine.count >= 2, statusLine[1] == "200" else { continue }  // read the error body to the end
                body = end
                start = end
            }
            // Events are blocks of lines ended by an empty line.
            while let blank = Self.blankLine(in: bytes, from: start) {
                let block = String(decoding: bytes[start..<blank], as: UTF8.self)
                start = blank + 2
                var kind = "", data = ""
                for line in block.split(separator: "\n") {
                    if line.hasPrefix("event: ") { kind = String(line.dropFirst(7)) }
                    if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                }
                if kind == "gone" {
                    let oldest = (try? JSONDecoder().decode([String: UInt64].self, from: Data(data.utf8)))?["oldest_id"] ?? 0
                    throw StreamEnd.gone(oldest: oldest)
                }
                guard !data.isEmpty, let event = try? JSONDecoder().decode(StreamEvent.self, from: Data(data.utf8)) else { continue }
                last = event.id
                if try !handle(event) { return last }
            }
            if start > 65536 { bytes.removeFirst(start); start = 0 }
        }
    }

    /// The index of the first "\n\n" at or after `from`.
    static func blankLine(in b: [UInt8], from: Int) -> Int? {
        var i = from
        while i + 1 < b.count {
            if b[i] == 10, b[i + 1] == 10 { return i }
            i += 1
        }
        return nil
    }

    /// Throws the error answer the daemon gave instead of a stream.
    static func refusal(_ bytes: [UInt8], _ end: Int) throws -> Never {
        let statusLine = String(decoding: bytes.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        let status = statusLine.count >= 2 ? Int(statusLine[1]) ?? 0 : 0
        let object = (try? JSONSerialization.jsonObject(with: Data(bytes[end...]))) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        if status == 410, let oldest = error?["oldest_id"] as? Int { throw StreamEnd.gone(oldest: UInt64(oldest)) }
        throw StreamEnd.refused(status: status, message: error?["message"] as? String ?? String(decoding: bytes[end...], as: UTF8.self))
    }
}
