import CDBus
import Foundation
import PeerLink
#if canImport(Glibc)
import Glibc
#endif

/// Lets a connection's dispatch thread sleep in `poll` on the bus socket and wake at once
/// when there is work: bytes from the bus, a message another thread queued but could not
/// write, a message another thread's libdbus call already read, or `stop`. libdbus tells
/// about the last two through its wakeup-main and dispatch-status callbacks, which write a
/// byte to a pipe the thread also polls.
///
/// Without it the thread sat in `dbus_connection_read_write(conn, 100)`, which holds
/// libdbus's I/O path for the whole 100 ms: a caller's message waited for it to time out
/// before it could be written, so every call took about 100 ms on the host (20 AddMatch:
/// 2.1 s) and 0.2–0.7 s in the emulated lab VM.
package final class DBusWakeup: @unchecked Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

    /// nil when no pipe can be made (the caller falls back to timed reads).
    package init?() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Asks libdbus to poke this pipe when a queued message needs the thread or when
    /// messages wait in the incoming queue. Undo with `uninstall` before the pipe goes.
    package func install(on connection: OpaquePointer) {
        let data = UnsafeMutableRawPointer(bitPattern: Int(writeEnd) + 1)
        dbus_connection_set_wakeup_main_function(connection, { d in DBusWakeup.poke(d) }, data, nil)
        dbus_connection_set_dispatch_status_function(connection, { _, _, d in DBusWakeup.poke(d) }, data, nil)
    }

    package func uninstall(from connection: OpaquePointer) {
        dbus_connection_set_wakeup_main_function(connection, nil, nil, nil)
        dbus_connection_set_dispatch_status_function(connection, nil, nil, nil)
    }

    /// Wakes the thread (from any thread).
    package func poke() { Self.poke(UnsafeMutableRawPointer(bitPattern: Int(writeEnd) + 1)) }

    private static func poke(_ data: UnsafeMutableRawPointer?) {
        guard let data else { return }
        var byte: UInt8 = 1
        _ = write(Int32(Int(bitPattern: data) - 1), &byte, 1)  // a full pipe already wakes the thread
    }

    /// Sleeps until the bus socket `fd` is readable (or writable while libdbus has output
    /// queued), the pipe was poked, or `timeoutMillis` passed.
    package func wait(socket fd: Int32, connection: OpaquePointer, timeoutMillis: Int32) {
        let out: Int16 = dbus_connection_has_messages_to_send(connection) != 0 ? Int16(POLLOUT) : 0
        var fds = [pollfd(fd: fd, events: Int16(POLLIN) | out, revents: 0), pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)]
        _ = poll(&fds, 2, timeoutMillis)
        if fds[1].revents != 0 {
            var sink = [UInt8](repeating: 0, count: 64)
            while read(readEnd, &sink, sink.count) > 0 {}
        }
    }
}
