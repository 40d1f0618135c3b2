import Foundation
import PeerLink
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 exchange on a connected stream socket, with blocking calls under deadlines:
/// what the API's Unix socket server and the metrics endpoint's TCP server share.
enum HTTPConnection {
    /// Accepts on listening socket `fd` on a thread of its own (`<name>.accept`) until the
    /// socket is closed; each connection `gate` lets in is served on a thread of its own
    /// (`<name>.conn`) and closed after it is counted out (so a client that connects again at
    /// once is not turned away as busy); the others are answered `busy` and closed.
    static func accept(on fd: Int32, name: String, gate: ConnectionGate,
                       busy: @escaping @Sendable () -> HTTPResponse, serve: @escaping @Sendable (Int32) -> Void) {
        BlockingCall.thread(name + ".accept") {
            while true {
                let client = Glibc.accept(fd, nil, nil)
                if client >= 0 { _ = fcntl(client, F_SETFD, FD_CLOEXEC) }
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE {
                        if errno != EINTR { usleep(100_000) }
                        continue
                    }
                    return
                }
                guard gate.admit() else {
                    UnixSocket.setTimeouts(client, receive: .milliseconds(100), send: .milliseconds(100))
                    _ = UnixSocket.writeAll(client, busy().serialized)
                    close(client)
                    continue
                }
                BlockingCall.thread(name + ".conn") {
                    serve(client)
                    gate.release()
                    close(client)
                }
            }
        }
    }

    /// Reads until a whole request is in, or the parser refuses, or `timeout` passes (408).
    static func readRequest(_ fd: Int32, limits: HTTPRequestParser.Limits, timeout: Duration,
                            sendTimeout: Duration) -> Result<HTTPRequest, HTTPParseError> {
        let deadline = ContinuousClock.now + timeout
        var parser = HTTPRequestParser(limits: limits)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return .failure(HTTPParseError(status: 408, message: "the request took longer than \(timeout)")) }
            UnixSocket.setTimeouts(fd, receive: left, send: sendTimeout)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                return .failure(HTTPParseError(status: 408, message: "the request took longer than \(timeout)"))
            }
            guard n > 0 else { return .failure(.bad("the connection ended before the request was complete")) }
            do {
                if let r = try parser.push(buffer[..<n]) { return .success(r) }
            } catch {
                return .failure(error)
            }
        }
    }

    /// Writes the response, then half-closes and drains briefly so that unread request
    /// bytes do not turn the close into a reset that loses the answer.
    static func finish(_ fd: Int32, _ response: HTTPResponse) {
        guard UnixSocket.writeAll(fd, response.serialized) else { return }
        shutdown(fd, Int32(SHUT_WR))
        UnixSocket.setTimeouts(fd, receive: .milliseconds(200), send: .milliseconds(200))
        var sink = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<256 {
            guard sink.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) > 0 else { break }
        }
    }
}
