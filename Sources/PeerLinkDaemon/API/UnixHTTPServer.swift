import Dispatch
import Foundation
import PeerLink
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's API server: HTTP/1.1 on a Unix stream socket, one request per connection.
///
/// Threading: one thread blocks in `accept`; each connection gets a thread of its own that
/// reads the request with blocking calls under a deadline, runs the route (async) and writes
/// the answer. Connections are few (local programs) and an event stream holds its thread for
/// as long as the client follows it, so threads are simpler than readiness polling here; a
/// connection over `maxConnections` is answered 503 at once.
///
/// Every connection's caller is checked with `SO_PEERCRED` against `APIAccess` before the
/// route runs: others get 403.
public final class UnixHTTPServer: Sendable {
    public struct Options: Sendable {
        /// The socket file's mode (group and owner: 0660).
        public var socketMode: mode_t = 0o660
        public var limits = HTTPRequestParser.Limits()
        /// Time a client has to send its whole request.
        public var requestTimeout: Duration = .seconds(10)
        /// Time a write may block (a client that stops reading is dropped).
        public var sendTimeout: Duration = .seconds(10)
        public var maxConnections = 32
        public init() {}
    }

    /// Answers one request from an admitted caller.
    public typealias Handler = @Sendable (HTTPRequest, PeerCredentials) async -> HTTPReply

    public let path: String
    let fd: Int32
    let access: APIAccess
    let options: Options
    let handler: Handler
    private let gate: ConnectionGate

    /// Binds and listens at `path` (an old socket nobody answers on is replaced; a live one
    /// is an error: another daemon serves there), mode `options.socketMode`, group
    /// `access.groupID` when set.
    public init(path: String, access: APIAccess, options: Options = Options(), handler: @escaping Handler) throws {
        self.path = path; self.access = access; self.options = options; self.handler = handler
        gate = ConnectionGate(capacity: options.maxConnections)
        var st = stat()
        if lstat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFSOCK else { throw UnixSocket.Failure(description: "\(path) exists and is not a socket", code: EEXIST) }
            if let other = try? UnixSocket.connect(path) {
                close(other)
                throw UnixSocket.Failure(description: "another daemon already serves at \(path)", code: EADDRINUSE)
            }
            unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw UnixSocket.failure("socket(AF_UNIX)") }
        let bound = try UnixSocket.withAddress(path) { bind(fd, $0, $1) }
        guard bound == 0, listen(fd, 64) == 0 else {
            let e = errno
            close(fd)
            throw UnixSocket.failure("cannot listen on \(path)", e)
        }
        if let g = access.groupID { _ = chown(path, uid_t.max, g) }
        guard chmod(path, options.socketMode) == 0 else {
            let e = errno
            close(fd); unlink(path)
            throw UnixSocket.failure("cannot set the mode of \(path)", e)
        }
        self.fd = fd
    }

    /// Starts accepting on a thread of its own.
    public func start() {
        HTTPConnection.accept(on: fd, name: "pl.api", gate: gate,
                              busy: { [options] in HTTPResponse.error(503, "busy", "too many connections to the daemon's API (\(options.maxConnections)); try again") },
                              serve: { [self] client in serve(client) })
    }

    /// Stops accepting and removes the socket file (connections under way finish).
    public func stop() {
        guard gate.stop() else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        unlink(path)
    }

    /// Connections being served now.
    public var openConnections: Int { gate.open }

    // MARK: one connection

    /// Answers one connection; the caller closes it.
    private func serve(_ client: Int32) {
        UnixSocket.setTimeouts(client, receive: options.requestTimeout, send: options.sendTimeout)
        let request: HTTPRequest
        switch read(client) {
        case let .success(r): request = r
        case let .failure(e):
            finish(client, HTTPResponse.error(e.status, Self.code(for: e.status), e.message))
            return
        }
        guard let caller = PeerCredentials.of(socket: client) else {
            finish(client, .error(403, "forbidden", "the kernel gave no credentials for this connection"))
            return
        }
        if let why = access.refusal(for: caller) {
            finish(client, .error(403, "forbidden", why))
            return
        }
        let handler = self.handler
        switch Self.wait({ await handler(request, caller) }) {
        case let .response(r):
            finish(client, r)
        case let .stream(head, next):
            guard UnixSocket.writeAll(client, head.head(length: nil)) else { return }
            while let chunk = Self.wait(next), UnixSocket.writeAll(client, chunk) {}
        }
    }

    private func read(_ client: Int32) -> Result<HTTPRequest, HTTPParseError> {
        HTTPConnection.readRequest(client, limits: options.limits, timeout: options.requestTimeout, sendTimeout: options.sendTimeout)
    }

    private func finish(_ client: Int32, _ response: HTTPResponse) { HTTPConnection.finish(client, response) }

    static func code(for status: Int) -> String {
        switch status {
        case 408: return "timeout"
        case 413: return "body_too_large"
        case 431: return "headers_too_large"
        case 501: return "not_implemented"
        case 505: return "http_version"
        default: return "bad_request"
        }
    }

    /// Runs async work from a connection's thread (not the cooperative pool) and waits for it.
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await body()
            box.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        guard let value = box.withLock({ $0.take() }) else { preconditionFailure("a finished task left no value") }
        return value
    }
}
