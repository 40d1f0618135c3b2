#if canImport(Glibc)
import Glibc
#endif

/// A file PeerLink reads or writes (a key, the trust list, a file sent or received) that could
/// not be used: which file, and why (`PeerLinkError.file`).
public struct FileFailure: Equatable, Sendable, CustomStringConvertible {
    /// What PeerLink was doing with the file.
    public enum Operation: String, Sendable {
        /// `open`: opening it for reading; `read`: reading it; `readBack`: reading back a
        /// partial file to resume; `write`: creating or writing it; `create`: creating a
        /// directory; `move`: moving a verified file to its final name.
        case open, read, readBack, write, create, move
    }

    /// When the file changed under PeerLink.
    public enum Activity: String, Sendable {
        /// `reading`: while its SHA-256 was computed; `sending`: while it was sent;
        /// `queued`: since it was queued for a later delivery.
        case reading, sending, queued
    }

    /// Why the file could not be used.
    public enum Reason: Equatable, Sendable {
        /// A system call failed with the OS error `errno`.
        case system(Operation, errno: Int32)
        /// The operation failed; the text is the system's message.
        case failed(Operation, message: String)
        /// The disk holding the file is full.
        case diskFull
        /// The file's size changed from `from` to `to` bytes (a smaller `to` when it shrank).
        case changedSize(from: UInt64, to: UInt64, during: Activity)
        /// The path is not a regular file (a directory, a device…).
        case notRegularFile
        /// A key file that other users can read (its permission bits are `mode`).
        case readableByOthers(mode: UInt32)
        /// The file is not what PeerLink expects there; the text says why.
        case invalidContent(String)
        /// The file was closed before the operation (the transfer was refused or ended).
        case closed
    }

    /// The file's path.
    public var path: String
    /// Why it could not be used.
    public var reason: Reason

    /// The failure of `path` for `reason`.
    public init(path: String, _ reason: Reason) { self.path = path; self.reason = reason }

    /// One line naming the file and saying why (and, for a key others can read, the fix).
    public var description: String {
        switch reason {
        case let .system(op, e): return "cannot \(Self.verb(op, path)): \(String(cString: strerror(e)))"
        case let .failed(op, message): return "cannot \(Self.verb(op, path)): \(message)"
        case .diskFull: return "cannot write \(path): the disk is full"
        case let .changedSize(from, to, during):
            let when = switch during { case .reading: "while being read"; case .sending: "while being sent"; case .queued: "since it was queued" }
            return "\(path) changed size \(when) (\(from) → \(to) bytes)"
        case .notRegularFile: return "\(path) is not a regular file"
        case let .readableByOthers(mode): return "\(path) is readable by other users (mode \(String(mode, radix: 8))); run: chmod 600 \(path)"
        case let .invalidContent(why): return "\(path) \(why)"
        case .closed: return "\(path) was closed before the transfer ended"
        }
    }

    private static func verb(_ op: Operation, _ path: String) -> String {
        switch op {
        case .open: return "open \(path) for reading"
        case .read: return "read \(path)"
        case .readBack: return "read back \(path)"
        case .write: return "write \(path)"
        case .create: return "create \(path)"
        case .move: return "move the verified file to \(path)"
        }
    }
}
