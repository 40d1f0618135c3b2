import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A file-system call that failed: which, on what path, and errno's text.
public struct FileError: Error, CustomStringConvertible, Sendable {
    /// The call that failed, such as `open`, `fsync`, `rename` or `unlink`.
    public let operation: String
    /// The path the call was made on.
    public let path: String
    /// The `errno` the call set.
    public let errno: Int32

    /// Makes an error for `operation` on `path` that failed with `errno`.
    public init(operation: String, path: String, errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    public var description: String { "\(operation) \(path): \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// The file operations a crash-safe ledger is built from: fsync of files and directories,
/// atomic replacement (write a temporary, fsync, rename, fsync the directory), and moves
/// that are durable once they return.
public enum DurableFile {
    static func fail(_ operation: String, _ path: String) -> FileError {
        FileError(operation: operation, path: path, errno: Glibc.errno)
    }

    /// Flushes `path` (a file or a directory) to the device.
    public static func sync(_ path: String, directory: Bool = false) throws {
        let fd = open(path, (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw fail("open", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw fail("fsync", path) }
    }

    /// The directory holding `path`.
    public static func parent(of path: String) -> String {
        let dir = (path as NSString).deletingLastPathComponent
        return dir.isEmpty ? "." : dir
    }

    /// Whether something exists at `path` (not following a final symbolic link).
    public static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// The size in bytes, inode and device of what is at `path` (not following a final symbolic
    /// link), or nil when nothing is there.
    public static func identity(_ path: String) -> (size: UInt64, inode: UInt64, device: UInt64)? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return (UInt64(st.st_size), UInt64(st.st_ino), UInt64(st.st_dev))
    }

    /// Whether `path` is a regular file (not following a final symbolic link).
    public static func isRegularFile(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    /// Creates `path` and its missing parents, and makes the new entries durable.
    public static func makeDirectory(_ path: String) throws {
        if exists(path) { return }
        let up = parent(of: path)
        if up != path { try makeDirectory(up) }
        guard mkdir(path, 0o700) == 0 || Glibc.errno == EEXIST else { throw fail("mkdir", path) }
        try sync(up, directory: true)
    }

    /// Replaces `path` with `bytes` so that a crash at any instant leaves either the old file
    /// or the new one, never a mix: a temporary beside it is written and fsynced, renamed over
    /// it, and the directory fsynced.
    public static func replace(_ path: String, with bytes: [UInt8]) throws {
        let dir = parent(of: path)
        let temp = dir + "/." + ((path as NSString).lastPathComponent) + ".tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw fail("create", temp) }
        do {
            try writeAll(fd, bytes, path: temp)
            guard fsync(fd) == 0 else { throw fail("fsync", temp) }
        } catch {
            close(fd)
            unlink(temp)
            throw error
        }
        close(fd)
        CrashPoint.hit(CrashPoint.atomicAfterTempSync)
        guard rename(temp, path) == 0 else { throw fail("rename", temp) }
        CrashPoint.hit(CrashPoint.atomicAfterRename)
        try sync(dir, directory: true)
    }

    /// Writes every byte of `bytes` to `fd`.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws {
        try bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var done = 0
            while done < raw.count {
                let n = write(fd, base + done, raw.count - done)
                if n < 0 {
                    if Glibc.errno == EINTR { continue }
                    throw fail("write", path)
                }
                done += n
            }
        }
    }

    /// Renames `from` to `to` (same file system) and fsyncs both directories.
    public static func move(_ from: String, to: String) throws {
        guard rename(from, to) == 0 else { throw fail("rename", from) }
        try sync(parent(of: to), directory: true)
        if parent(of: from) != parent(of: to) { try sync(parent(of: from), directory: true) }
    }

    /// Gives the file at `from` the name `to` as well, failing with EEXIST rather than
    /// replacing anything already there.
    public static func link(_ from: String, to: String) throws {
        guard Glibc.link(from, to) == 0 else { throw fail("link", to) }
    }

    /// Removes `path`; a missing file is not an error.
    public static func remove(_ path: String) throws {
        guard unlink(path) == 0 || Glibc.errno == ENOENT else { throw fail("unlink", path) }
    }

    /// Names in `directory` (without "." and ".."), or none when it does not exist.
    public static func names(in directory: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    }
}
