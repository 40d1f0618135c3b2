import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the daemon's API socket lives (docs/API.md, "The socket"):
/// the configuration's `runtime_dir`, else `$PEERLINK_RUNTIME_DIR`, else `/run/peerlink` for
/// root, else `$XDG_RUNTIME_DIR/peerlink`, else `/tmp/peerlink-<uid>`; the socket is
/// `daemon.sock` in it. The CLI finds a running daemon by the same rule.
public enum DaemonPaths {
    public static let socketName = "daemon.sock"

    /// The runtime directory by the rule above (`configured` is the `runtime_dir` key).
    public static func runtimeDirectory(configured: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
                                        uid: UInt32 = getuid()) -> String {
        if let c = configured, !c.isEmpty { return c }
        if let d = environment["PEERLINK_RUNTIME_DIR"], !d.isEmpty { return d }
        if uid == 0 { return "/run/peerlink" }
        if let x = environment["XDG_RUNTIME_DIR"], !x.isEmpty { return (x as NSString).appendingPathComponent("peerlink") }
        return "/tmp/peerlink-\(uid)"
    }

    /// The API socket's path in `runtimeDirectory`.
    public static func socket(in runtimeDirectory: String) -> String {
        (runtimeDirectory as NSString).appendingPathComponent(socketName)
    }

    /// Creates the runtime directory when missing: mode 0750 with group `groupID` when the API
    /// group exists (its members must reach the socket), else 0700. An existing directory is
    /// left as it is.
    public static func prepare(_ directory: String, groupID: UInt32?) throws {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDir) {
            guard isDir.boolValue else { throw UnixSocket.Failure(description: "\(directory) is not a directory", code: ENOTDIR) }
            return
        }
        let parent = (directory as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        guard mkdir(directory, groupID == nil ? 0o700 : 0o750) == 0 || errno == EEXIST else {
            throw UnixSocket.failure("cannot create \(directory)")
        }
        if let g = groupID {
            _ = chown(directory, uid_t.max, g)
            _ = chmod(directory, 0o750)
        }
    }
}
