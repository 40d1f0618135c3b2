import CBlueZ
import Foundation
import PeerLink

/// Reads controller state from the kernel's Bluetooth management interface. Blocking, with a
/// deadline: call it from a thread that may block (a watcher thread, the doctor).
public enum ManagementSocket {
    /// Read Controller Information for `hciN`.
    public static func controllerInfo(index: Int, timeout: Duration = .seconds(2)) throws -> ControllerInfo {
        guard let idx = UInt16(exactly: index), idx != 0xffff else { throw ManagementError.status(0x11) }
        let fd = peerlink_bt_mgmt_socket()
        guard fd >= 0 else {
            throw ManagementError.system("cannot open a Bluetooth management socket: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let cmd = ManagementCodec.command(ManagementCodec.readInfo, index: idx)
        let sent = cmd.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard sent == cmd.count else { throw ManagementError.system("mgmt write failed: \(String(cString: strerror(errno)))") }
        let deadline = Date().addingTimeInterval(timeout.inSeconds)
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw ManagementError.system("no mgmt reply from the kernel within \(timeout.secondsText) s") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&pfd, 1, Int32(left * 1000) + 1)
            if r < 0, errno == EINTR { continue }
            guard r > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ManagementError.system("mgmt read failed: \(String(cString: strerror(errno)))")
            }
            if let result = try ManagementCodec.reply(to: ManagementCodec.readInfo, index: idx, packet: Array(buffer[0..<n])) {
                return try ManagementCodec.controllerInfo(result)
            }
        }
    }

    /// `hciN`'s index, or nil for another name.
    public static func index(of adapter: String) -> Int? {
        let name = adapter.split(separator: "/").last.map(String.init) ?? adapter
        guard name.hasPrefix("hci") else { return nil }
        return Int(name.dropFirst(3))
    }
}
