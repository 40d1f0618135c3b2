import Foundation
#if canImport(Glibc)
import Glibc
import PeerLinkCore
import PeerLinkWire
#endif

/// Where a node keeps its key, display name and trusted peers:
/// `$PEERLINK_CONFIG_DIR`, else `$XDG_CONFIG_HOME/peerlink`, else `~/.config/peerlink`.
public struct IdentityStore: Sendable {
    /// The folder holding the files, as chosen at init.
    public let directory: String
    /// `identity.key`: the private key, one line of base64, mode 0600.
    public var keyPath: String { (directory as NSString).appendingPathComponent("identity.key") }
    /// `display-name`: the display name set with `setDisplayName(_:)`.
    public var namePath: String { (directory as NSString).appendingPathComponent("display-name") }
    /// `trusted-peers`: the trust list (`TrustList`).
    public var trustPath: String { (directory as NSString).appendingPathComponent("trusted-peers") }

    /// Uses `directory`, or when nil the first of `$PEERLINK_CONFIG_DIR`,
    /// `$XDG_CONFIG_HOME/peerlink` and `~/.config/peerlink` (empty variables are skipped). Nothing
    /// is created until a file is written.
    public init(directory: String? = nil) {
        let env = ProcessInfo.processInfo.environment
        if let directory { self.directory = directory }
        else if let d = env["PEERLINK_CONFIG_DIR"], !d.isEmpty { self.directory = d }
        else if let x = env["XDG_CONFIG_HOME"], !x.isEmpty { self.directory = (x as NSString).appendingPathComponent("peerlink") }
        else { self.directory = (NSHomeDirectory() as NSString).appendingPathComponent(".config/peerlink") }
    }

    /// The stored identity, created (mode 0600) on first use. `created` tells which.
    public func loadOrCreate() throws -> (identity: Identity, created: Bool) {
        let fm = FileManager.default
        if fm.fileExists(atPath: keyPath) {
            var st = stat()
            if stat(keyPath, &st) == 0, st.st_mode & 0o077 != 0 {
                throw PeerLinkError.file(FileFailure(path: keyPath, .readableByOthers(mode: UInt32(st.st_mode & 0o777))))
            }
            guard let text = try? String(contentsOfFile: keyPath, encoding: .utf8),
                  let raw = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw PeerLinkError.file(FileFailure(path: keyPath, .invalidContent("is not a PeerLink key file (expected one line of base64)")))
            }
            do {
                return (try Identity(privateKeyBytes: [UInt8](raw)), false)
            } catch {
                throw PeerLinkError.file(FileFailure(path: keyPath, .invalidContent("does not hold a usable key: \(error)")))
            }
        }
        do {
            try fm.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw PeerLinkError.file(FileFailure(path: directory, .failed(.create, message: error.localizedDescription)))
        }
        let identity = Identity()
        let text = Data(identity.privateKeyBytes).base64EncodedString() + "\n"
        let tmp = keyPath + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw PeerLinkError.file(FileFailure(path: tmp, .system(.write, errno: errno))) }
        let bytes = Array(text.utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        close(fd)
        guard n == bytes.count, rename(tmp, keyPath) == 0 else {
            throw PeerLinkError.file(FileFailure(path: keyPath, .system(.write, errno: errno)))
        }
        return (identity, true)
    }

    /// The stored display name, else the host name.
    public func displayName() -> String {
        if let s = try? String(contentsOfFile: namePath, encoding: .utf8) {
            let t = s.trimmingCharacters(in: .whitespacesAndNewlines)
            if (try? Advertisement.validate(displayName: t)) != nil { return t }
        }
        // gethostname, not ProcessInfo.hostName: Foundation looks that name up (getaddrinfo)
        // to find a canonical one, which waits for DNS where /etc/hosts does not list it.
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count - 1) == 0 ? String(cString: buffer) : ""
        let name = String(host.split(separator: ".").first ?? "peerlink")
        return (try? Advertisement.validate(displayName: name)) != nil ? name : "peerlink"
    }

    /// Stores `name` as the display name (`display-name`), creating the folder if needed. Throws
    /// when the name is not 1–63 bytes of UTF-8 or the file cannot be written.
    public func setDisplayName(_ name: String) throws {
        try Advertisement.validate(displayName: name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try (name + "\n").write(toFile: namePath, atomically: true, encoding: .utf8)
    }
}
