import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small blocking client of the daemon's API for the CLI and tests: one request per
/// connection, the answer read until the daemon closes.
public struct DaemonClient: Sendable {
    /// No daemon listens at the socket (missing file, or nobody accepting).
    public struct NotRunning: Error, CustomStringConvertible {
        public let path: String
        public var description: String { "no daemon at \(path) (start one with `peerlink daemon --config FILE`)" }
    }

    public let socketPath: String
    public var timeout: Duration = .seconds(10)

    public init(socketPath: String) { self.socketPath = socketPath }

    /// A connection to the daemon's socket; `NotRunning` when nothing listens there.
    func connect() throws -> Int32 {
        do {
            return try UnixSocket.connect(socketPath)
        } catch {
            if error.code == ENOENT || error.code == ECONNREFUSED { throw NotRunning(path: socketPath) }
            throw error
        }
    }

    /// Sends `method path` with an optional JSON body; returns the status and the body.
    public func request(_ method: String, _ path: String, json body: [UInt8]? = nil) throws -> (status: Int, body: [UInt8]) {
        let fd = try connect()
        defer { close(fd) }
        UnixSocket.setTimeouts(fd, receive: timeout, send: timeout)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        guard UnixSocket.writeAll(fd, Array((head + "\r\n").utf8) + (body ?? [])) else {
            throw UnixSocket.failure("cannot write to \(socketPath)")
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw UnixSocket.failure("reading from \(socketPath)") }
            if n == 0 { break }
            answer += buffer[..<n]
        }
        guard let end = HTTPRequestParser.headerEnd(answer, from: 0) else {
            throw UnixSocket.Failure(description: "the daemon's answer has no complete header section", code: 0)
        }
        let statusLine = String(decoding: answer.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw UnixSocket.Failure(description: "the daemon's answer has no status line", code: 0)
        }
        return (status, Array(answer[end...]))
    }
}
