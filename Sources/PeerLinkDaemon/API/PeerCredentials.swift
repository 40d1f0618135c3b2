#if canImport(Glibc)
import Glibc
#endif

/// Who is at the other end of a Unix socket connection, as the kernel recorded it when the
/// client connected (`SO_PEERCRED`, `SO_PEERGROUPS`): not something the client can claim.
public struct PeerCredentials: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// Supplementary groups (empty when the kernel cannot say: before Linux 4.13).
    public var groups: [UInt32]

    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32] = []) {
        self.pid = pid; self.uid = uid; self.gid = gid; self.groups = groups
    }

    // Linux's values (asm-generic, also on arm64 and x86-64).
    static let soPeerCred: Int32 = 17
    static let soPeerGroups: Int32 = 59

    /// Reads the credentials of a connected Unix socket; nil when the kernel gives none.
    public static func of(socket fd: Int32) -> PeerCredentials? {
        var raw: (Int32, UInt32, UInt32) = (0, 0, 0)
        var len = socklen_t(MemoryLayout.size(ofValue: raw))
        guard getsockopt(fd, SOL_SOCKET, soPeerCred, &raw, &len) == 0, Int(len) == MemoryLayout.size(ofValue: raw) else { return nil }
        var groups = [UInt32](repeating: 0, count: 256)
        var glen = socklen_t(groups.count * 4)
        let ok = groups.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, soPeerGroups, $0.baseAddress, &glen) } == 0
        return PeerCredentials(pid: raw.0, uid: raw.1, gid: raw.2, groups: ok ? Array(groups.prefix(Int(glen) / 4)) : [])
    }
}

/// Who may use the daemon's API: root, the daemon's own user, and members of its API group
/// (`peerlink`, when that group exists). A pure rule, so it is tested without other users.
public struct APIAccess: Sendable, Equatable {
    /// The group whose members may connect.
    public static let groupName = "peerlink"

    public var daemonUID: UInt32
    /// The API group's ID; nil when the group does not exist.
    public var groupID: UInt32?

    public init(daemonUID: UInt32, groupID: UInt32?) { self.daemonUID = daemonUID; self.groupID = groupID }

    /// The rule for this process: its user, and the `peerlink` group if the system has one.
    public static func forThisProcess() -> APIAccess {
        APIAccess(daemonUID: getuid(), groupID: groupID(named: groupName))
    }

    /// A group's ID by name, through the system's group database.
    public static func groupID(named name: String) -> UInt32? {
        var group = group(), result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getgrnam_r(name, &group, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return group.gr_gid
    }

    /// Nil when `caller` may use the API, else why not (for the 403 answer).
    public func refusal(for caller: PeerCredentials) -> String? {
        if caller.uid == 0 || caller.uid == daemonUID { return nil }
        if let g = groupID, caller.gid == g || caller.groups.contains(g) { return nil }
        let group = groupID == nil ? "(the system has no '\(Self.groupName)' group)" : "or a member of the group '\(Self.groupName)'"
        return "uid \(caller.uid) may not use this daemon: only root, uid \(daemonUID) \(group)"
    }
}
