import Foundation
import PeerLink
import PeerLinkDaemon

/// Where running peerlink commands listen for `peerlink links`: one Unix socket per process
/// (`<pid>.sock`, mode 0600, answering only this user and root) in a directory that only this
/// user can write. The directory may be shared with the daemon's API socket (`daemon.sock`,
/// which its group may reach: mode 0750).
enum ControlDirectory {
    static var path: String {
        if let dir = ProcessInfo.processInfo.environment["PEERLINK_RUNTIME_DIR"], !dir.isEmpty { return dir }
        if let run = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !run.isEmpty { return run + "/peerlink" }
        return "/tmp/peerlink-\(getuid())"
    }

    static func socketPath(pid: Int32) -> String { path + "/\(pid).sock" }
}

/// What a running command reports about itself and its session.
struct ControlReport: Codable {
    var pid: Int32
    var command: String
    var peer: String
    var name: String
    var policy: String
    var peers: [PeerLinks]
}

/// Serves `ControlReport`s on this process's control socket: a client connects, the server
/// writes one JSON document and closes. Best effort: a failure only disables `peerlink links`
/// for this process (and is reported as a note).
final class ControlServer: @unchecked Sendable {
    private let fd: Int32
    private let path: String

    /// Starts serving `session`'s links; returns nil (after a note) if the socket cannot be made.
    static func start(command: String, node: Node, session: Session, output: Output) -> ControlServer? {
        do {
            let server = try ControlServer(path: ControlDirectory.socketPath(pid: getpid()))
            server.serve { await ControlReport(pid: getpid(), command: command, peer: node.peerID.description, name: node.displayName,
                                               policy: session.policy.kind.rawValue, peers: session.links()) }
            return server
        } catch {
            output.note("note: `peerlink links` will not see this process: \(error)")
            return nil
        }
    }

    private init(path: String) throws {
        let dir = (path as NSString).deletingLastPathComponent
        if mkdir(dir, 0o700) != 0, errno != EEXIST {
            throw RuntimeFailure("cannot create \(dir): \(String(cString: strerror(errno)))")
        }
        var st = stat()
        guard stat(dir, &st) == 0, st.st_uid == getuid(), st.st_mode & 0o022 == 0 else {
            throw RuntimeFailure("\(dir) must be a directory owned by you that only you can write (mode 0700 or 0750)")
        }
        unlink(path)
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RuntimeFailure("socket(AF_UNIX): \(String(cString: strerror(errno)))") }
        self.path = path
        var addr = try UnixAddress(path)
        let bound = withUnsafePointer(to: &addr.raw) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        // Owner only; until the chmod, the per-connection check below turns others away.
        guard bound == 0, chmod(path, 0o600) == 0, listen(fd, 8) == 0 else {
            let e = errno
            close(fd)
            throw RuntimeFailure("cannot listen on \(path): \(String(cString: strerror(e)))")
        }
        ExitCleanup.add(path)
    }

    /// Whether the process at the other end of `client` is this user's or root's: a
    /// report names peers and addresses, which other users of a shared directory must not read.
    static func mayAsk(_ client: Int32) -> Bool {
        guard let caller = PeerCredentials.of(socket: client) else { return false }
        return caller.uid == getuid() || caller.uid == 0
    }

    private func serve(_ report: @escaping @Sendable () async -> ControlReport) {
        let fd = self.fd
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    return
                }
                guard ControlServer.mayAsk(client) else { close(client); continue }
                let done = DispatchSemaphore(value: 0)
                Task {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    var data = (try? encoder.encode(await report())) ?? Data("{}".utf8)
                    data.append(0x0a)
                    data.withUnsafeBytes { buf in
                        guard let base = buf.baseAddress else { return }
                        var off = 0
                        while off < buf.count {
                            let n = send(client, base + off, buf.count - off, Int32(MSG_NOSIGNAL))
                            if n <= 0 { break }
                            off += n
                        }
                    }
                    close(client)
                    done.signal()
                }
                done.wait()
            }
        }
    }
}

/// Asks every running peerlink command for its report.
enum ControlClient {
    /// Reports of the live processes, and one line per socket that did not give one (hung,
    /// or answered with something else); stale sockets (their process is gone) are removed.
    static func collect(timeout: Double = 2) -> (reports: [ControlReport], problems: [String]) {
        let dir = ControlDirectory.path
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return ([], []) }
        var out: [ControlReport] = []
        var problems: [String] = []
        // The daemon's API socket may share the directory; `links` asks it separately.
        for name in names.sorted() where name.hasSuffix(".sock") && name != DaemonPaths.socketName {
            let path = dir + "/" + name
            switch query(path, timeout: timeout) {
            case let .success(r): out.append(r)
            case .failure(.refused): unlink(path)
            case let .failure(.failed(why)): problems.append("\(path): \(why)")
            }
        }
        return (out, problems)
    }

    enum QueryError: Error { case refused, failed(String) }

    static func query(_ path: String, timeout: Double) -> Result<ControlReport, QueryError> {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.failed("cannot create a socket: \(String(cString: strerror(errno)))")) }
        defer { close(fd) }
        guard var addr = try? UnixAddress(path) else { return .failure(.failed("socket path too long")) }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let rc = withUnsafePointer(to: &addr.raw) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else {
            let e = errno
            if e == ECONNREFUSED || e == ENOENT { return .failure(.refused) }
            return .failure(.failed("cannot connect: \(String(cString: strerror(e)))"))
        }
        var data = Data()
        var buf = [UInt8](repeating: 0, count: 65536)
        var timedOut = false
        while data.count < 16 << 20 {
            let n = recv(fd, &buf, buf.count, 0)
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { timedOut = true }
            if n <= 0 { break }
            data.append(contentsOf: buf[0..<n])
        }
        if timedOut { return .failure(.failed("no complete answer within \(timeout) s (is that process stuck?)")) }
        guard let r = try? JSONDecoder().decode(ControlReport.self, from: data) else {
            return .failure(.failed(data.isEmpty ? "closed without answering" : "answered with \(data.count) bytes that are not a PeerLink report"))
        }
        return .success(r)
    }
}

/// A `sockaddr_un` for a path that fits.
struct UnixAddress {
    var raw = sockaddr_un()
    init(_ path: String) throws {
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: raw.sun_path) else { throw RuntimeFailure("socket path too long: \(path)") }
        raw.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &raw.sun_path) { p in
            for (i, b) in bytes.enumerated() { p[i] = b }
        }
    }
}

/// Control sockets to remove when the process exits normally.
enum ExitCleanup {
    nonisolated(unsafe) private static var paths: [String] = []
    nonisolated(unsafe) private static var installed = false
    static func add(_ p: String) {
        paths.append(p)
        guard !installed else { return }
        installed = true
        atexit { for p in ExitCleanup.paths { unlink(p) } }
    }
}
