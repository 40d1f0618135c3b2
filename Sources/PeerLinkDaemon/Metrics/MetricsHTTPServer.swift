import Foundation
import PeerLink
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The metrics endpoint: `GET /metrics` over HTTP/1.1 on a TCP socket, one request per
/// connection, answered with the Prometheus text format (0.0.4).
///
/// Built like the API's server (`UnixHTTPServer`): the same strict request parser, a thread
/// blocking in `accept`, one thread per connection with deadlines on reading and writing, and
/// a cap on connections (over it: 503 at once). The limits are tighter: a scrape is a small
/// GET, so the header section is bounded at 8 KiB and a request with a body is refused.
/// Anything but `GET /metrics` is answered 404 (another path) or 405 (another method).
///
/// No access check: bind it to loopback (the default, 127.0.0.1) or to an address only the
/// scraper reaches. It tells peers' IDs and counts, never keys or file contents.
public final class MetricsHTTPServer: Sendable {
    public struct Options: Sendable {
        public var limits: HTTPRequestParser.Limits = {
            var l = HTTPRequestParser.Limits()
            l.headerBytes = 8 * 1024
            l.headerCount = 32
            l.bodyBytes = 0
            return l
        }()
        /// Time a client has to send its whole request.
        public var requestTimeout: Duration = .seconds(5)
        /// Time a write may block (a client that stops reading is dropped).
        public var sendTimeout: Duration = .seconds(5)
        public var maxConnections = 4
        public init() {}
    }

    /// The metrics text, made fresh for each scrape.
    public typealias Handler = @Sendable () async -> [UInt8]

    /// Where it listens (with the port the kernel chose when 0 was asked).
    public let address: MetricsAddress
    let fd: Int32
    let options: Options
    let handler: Handler
    private let gate: ConnectionGate

    /// The Content-Type of the Prometheus text format.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Binds and listens at `address`; throws when it cannot (in use, no such address).
    public init(address: MetricsAddress, options: Options = Options(), handler: @escaping Handler) throws {
        let fd = try address.listen()
        self.fd = fd
        self.address = MetricsAddress(host: address.host, port: MetricsAddress.boundPort(fd) ?? address.port)
        self.options = options
        self.handler = handler
        gate = ConnectionGate(capacity: options.maxConnections)
    }

    /// What a request gets, without I/O: the metrics (nil: make them) or a refusal.
    public static func route(_ request: HTTPRequest) -> HTTPResponse? {
        guard request.path == "/metrics" else { return text(404, "not found: only GET /metrics is served here\n") }
        guard request.method == "GET" else {
            var r = text(405, "method not allowed: only GET /metrics is served here\n")
            r.headers.append(("Allow", "GET"))
            return r
        }
        return nil
    }

    static func text(_ status: Int, _ body: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(body.utf8))
    }

    /// Starts accepting on a thread of its own.
    public func start() {
        HTTPConnection.accept(on: fd, name: "pl.metrics", gate: gate,
                              busy: { Self.text(503, "busy: too many scrapes at once\n") },
                              serve: { [self] client in serve(client) })
    }

    /// Stops accepting (a scrape under way finishes).
    public func stop() {
        guard gate.stop() else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    /// Answers one connection; the caller closes it.
    private func serve(_ client: Int32) {
        UnixSocket.setTimeouts(client, receive: options.requestTimeout, send: options.sendTimeout)
        switch HTTPConnection.readRequest(client, limits: options.limits, timeout: options.requestTimeout, sendTimeout: options.sendTimeout) {
        case let .failure(e):
            HTTPConnection.finish(client, Self.text(e.status, "\(e.message)\n"))
        case let .success(request):
            if let refusal = Self.route(request) {
                HTTPConnection.finish(client, refusal)
                return
            }
            let handler = self.handler
            let body = UnixHTTPServer.wait { await handler() }
            HTTPConnection.finish(client, HTTPResponse(status: 200, headers: [("Content-Type", Self.contentType)], body: body))
        }
    }
}
