import Foundation
import PeerLink
#if canImport(Glibc)
import Glibc
#endif

/// A blocking generic-netlink socket for short request/reply exchanges (nl80211 queries,
/// the lab's hwsim radios). Not for the cooperative pool: call it from a dedicated queue.
final class GenericNetlinkSocket {
    private let fd: Int32
    private var sequence: UInt32 = UInt32(truncatingIfNeeded: Date().timeIntervalSince1970.bitPattern) & 0xffff

    /// Why a netlink exchange failed: the operation and an errno.
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var code: Int32
        var description: String { "\(operation): \(String(cString: strerror(code)))" }
    }

    init(receiveTimeoutSeconds: Int = 3) throws {
        fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 16 /* NETLINK_GENERIC */)
        guard fd >= 0 else { throw Failure(operation: "socket(AF_NETLINK, NETLINK_GENERIC)", code: errno) }
        var tv = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var big: Int32 = 1 << 20
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// The numeric id of a generic netlink family (`nl80211`, `MAC80211_HWSIM`), nil when the
    /// kernel does not have it (module not loaded, no Wi-Fi support).
    func family(_ name: String) throws -> UInt16? {
        let replies = try exchange(family: NetlinkMessages.controlFamily, command: NetlinkMessages.controlGetFamily, flags: 0,
                                   attributes: [.string(NetlinkMessages.controlFamilyName, name)], allowError: [ENOENT])
        return replies.lazy.compactMap { $0.attributes.first { $0.type == NetlinkMessages.controlFamilyID }?.u16 }.first
    }

    /// Sends one request and collects its replies: every message up to `NLMSG_DONE` for a
    /// dump, else up to the ack. An error reply throws, except codes in `allowError`, which
    /// give an empty result.
    func exchange(family: UInt16, command: UInt8, flags: UInt16, attributes: [NetlinkMessages.Attribute],
                  allowError: [Int32] = []) throws -> [NetlinkMessages.Message] {
        sequence &+= 1
        let seq = sequence
        let dump = flags & NetlinkMessages.dumpFlags != 0
        let request = NetlinkMessages.request(family: family, command: command, flags: flags | NetlinkMessages.ackFlag,
                                              sequence: seq, attributes: attributes)
        let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard sent == request.count else { throw Failure(operation: "netlink send", code: errno) }
        var out: [NetlinkMessages.Message] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "netlink receive", code: errno)
            }
            for m in NetlinkMessages.messages(Array(buffer[0..<n])) where m.sequence == seq {
                if m.type == NetlinkMessages.typeDone { return out }
                if m.type == NetlinkMessages.typeError {
                    let code = -(m.errorCode ?? -Int32(EIO))
                    if code == 0 { if !dump { return out } else { continue } }
                    if allowError.contains(code) { return [] }
                    throw Failure(operation: "netlink command \(command)", code: code)
                }
                out.append(m)
            }
        }
    }
}
