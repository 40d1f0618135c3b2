import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Whether an API caller could read a file itself: the daemon may run as root, so a file it
/// can read is not enough — the caller must be able to, by the mode bits of the file and of
/// every directory above it (POSIX ACLs are not consulted: a file readable only through an
/// ACL is refused).
enum FileAccess {
    /// Whether mode bits `mode` of a file owned by `owner`:`group` grant `want` (4 read,
    /// 1 search) to `caller`.
    static func permits(mode: UInt32, owner: UInt32, group: UInt32, caller: PeerCredentials, want: UInt32) -> Bool {
        if caller.uid == 0 { return true }
        let bits: UInt32
        if caller.uid == owner { bits = (mode >> 6) & 7 }
        else if caller.gid == group || caller.groups.contains(group) { bits = (mode >> 3) & 7 }
        else { bits = mode & 7 }
        return bits & want == want
    }

    /// A file the caller may read, as checked: its real path and which file it was, so that
    /// the file opened later is the one checked (`copy`).
    struct CheckedFile: Sendable, Equatable {
        let path: String
        let device: UInt64
        let inode: UInt64
    }

    /// The file's real path (symbolic links resolved) when it is a regular file `caller` may
    /// read, else why not.
    static func readableFile(_ path: String, by caller: PeerCredentials) -> Result<CheckedFile, APIError> {
        guard let resolved = realpath(path, nil) else {
            return .failure(APIError(404, "no_file", "\(path): \(String(cString: strerror(errno)))"))
        }
        let real = String(cString: resolved)
        free(resolved)
        var st = stat()
        guard stat(real, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            return .failure(APIError(422, "not_a_file", "\(path) is not a regular file"))
        }
        var dir = (real as NSString).deletingLastPathComponent
        while true {
            var d = stat()
            guard stat(dir, &d) == 0, permits(mode: d.st_mode, owner: d.st_uid, group: d.st_gid, caller: caller, want: 1) else {
                return .failure(APIError(403, "not_readable", "uid \(caller.uid) may not enter \(dir)"))
            }
            if dir == "/" { break }
            dir = (dir as NSString).deletingLastPathComponent
        }
        guard permits(mode: st.st_mode, owner: st.st_uid, group: st.st_gid, caller: caller, want: 4) else {
            return .failure(APIError(403, "not_readable", "uid \(caller.uid) may not read \(path)"))
        }
        return .success(CheckedFile(path: real, device: UInt64(st.st_dev), inode: UInt64(st.st_ino)))
    }

    /// Copies the checked file to `destination` (created new, mode 0640) and fsyncs it. The
    /// file opened must be the file checked: a path changed in between (a directory or the
    /// file swapped for a link to something the caller may not read) is refused.
    static func copy(_ checked: CheckedFile, to destination: String) throws(APIError) {
        let source = checked.path
        let input = open(source, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard input >= 0 else { throw APIError(403, "not_readable", "cannot open \(source): \(String(cString: strerror(errno)))") }
        defer { close(input) }
        var opened = stat()
        guard fstat(input, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG,
              UInt64(opened.st_dev) == checked.device, UInt64(opened.st_ino) == checked.inode else {
            throw APIError(409, "file_changed", "\(source) changed between the access check and the copy; submit it again")
        }
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o640)
        guard output >= 0 else { throw APIError(500, "outbox", "cannot create \(destination): \(String(cString: strerror(errno)))") }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else {
                unlink(destination)
                throw APIError(500, "copy", "reading \(source): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            var off = 0
            while off < n {
                let w = buffer[off..<n].withUnsafeBytes { write(output, $0.baseAddress, $0.count) }
                if w < 0, errno == EINTR { continue }
                guard w > 0 else {
                    let e = errno
                    unlink(destination)
                    throw APIError(e == ENOSPC ? 507 : 500, e == ENOSPC ? "disk_full" : "copy", "writing \(destination): \(String(cString: strerror(e)))")
                }
                off += w
            }
        }
        guard fsync(output) == 0 else {
            unlink(destination)
            throw APIError(500, "copy", "fsync \(destination): \(String(cString: strerror(errno)))")
        }
    }
}
