import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// systemd's readiness protocol (`Type=notify`, sd_notify(3)) spoken directly: one datagram per
/// state change to the socket named by `NOTIFY_SOCKET`, and a watchdog keepalive every half
/// of `WATCHDOG_USEC`. Outside systemd (no `NOTIFY_SOCKET`) every call does nothing.
public struct SystemdNotify: Sendable {
    /// The socket's path (a leading `@` is an abstract socket), or nil outside systemd.
    public let socketPath: String?
    /// How often to send `WATCHDOG=1`, when systemd asks for it (half its timeout).
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        // WATCHDOG_PID, when set, names the process the watchdog is meant for.
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if path != nil, forUs, let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0 {
            watchdogInterval = .microseconds(Int64(usec / 2))
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends `state` ("READY=1", "STATUS=…", "STOPPING=1", "WATCHDOG=1"; several separated by
    /// newlines). Returns false when it could not be delivered (nothing is retried).
    @discardableResult
    public func send(_ state: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(socketPath.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let payload = Array(state.utf8)
        let sent = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                sendto(fd, payload, payload.count, Int32(MSG_NOSIGNAL), sa, length)
            }
        }
        return sent == payload.count
    }

    /// Sends `WATCHDOG=1` every `watchdogInterval` until the task is cancelled; returns at once
    /// when systemd asked for no watchdog. `healthy` is asked first each time: a daemon that
    /// stopped making progress stops the keepalives and systemd restarts it.
    public func keepWatchdog(healthy: @Sendable () async -> Bool = { true }) async {
        guard let interval = watchdogInterval else { return }
        while !Task.isCancelled {
            if await healthy() { send("WATCHDOG=1") }
            try? await Task.sleep(for: interval)
        }
    }
}
