import Foundation
#if canImport(Glibc)
import Glibc
import Synchronization
#endif

/// Free space where received files go, less what transfers already accepted will still write.
enum DiskSpace {
    /// Bytes an unprivileged writer may still use on the file system holding `directory`, or
    /// nil when the system cannot tell.
    static func available(at directory: String) -> UInt64? {
        var s = statvfs()
        guard statvfs(directory, &s) == 0 else { return nil }
        return UInt64(s.f_bavail) * UInt64(s.f_frsize)
    }

    /// The file system (device) holding `path`, or nil.
    static func device(of path: String) -> UInt64? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return UInt64(st.st_dev)
    }

    /// Bytes still to be written by accepted transfers, per file system, in this process: two
    /// offers that each fit but not together must not both be accepted and both fail.
    static let pending = PendingWrites()
}

/// Bytes promised to accepted transfers and not yet written, per file system.
final class PendingWrites: Sendable {
    private let bytes = Mutex<[UInt64: UInt64]>([:])

    /// Bytes promised on `device`.
    func promised(on device: UInt64) -> UInt64 { bytes.withLock { $0[device] ?? 0 } }

    /// Promises `count` bytes on `device` until the reservation is updated or dropped.
    func reserve(_ count: UInt64, on device: UInt64) -> DiskReservation {
        bytes.withLock { $0[device, default: 0] += count }
        return DiskReservation(device: device, remaining: count, owner: self)
    }

    fileprivate func release(_ count: UInt64, on device: UInt64) {
        bytes.withLock { b in
            let left = (b[device] ?? 0) - min(count, b[device] ?? 0)
            b[device] = left == 0 ? nil : left
        }
    }
}

/// Space promised to one incoming file; shrinks as bytes are written, released when dropped.
final class DiskReservation: Sendable {
    let device: UInt64
    private let remaining: Mutex<UInt64>
    private let owner: PendingWrites

    fileprivate init(device: UInt64, remaining: UInt64, owner: PendingWrites) {
        self.device = device
        self.remaining = Mutex(remaining)
        self.owner = owner
    }

    /// `count` more bytes reached the disk.
    func wrote(_ count: UInt64) {
        let n = remaining.withLock { r -> UInt64 in
            let n = min(count, r)
            r -= n
            return n
        }
        owner.release(n, on: device)
    }

    deinit { owner.release(remaining.withLock { $0 }, on: device) }
}
