import CPeerLinkSys
import Foundation
import PeerLink
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A listening Bluetooth socket, accepted from whenever the I/O loop finds it readable, as
/// `TCPListener` does: a task waiting on the loop, no thread of its own.
///
/// A Bluetooth listener is reported readable only when a connection waits (`shutdown` does
/// not wake it), so `close()` cancels the accept task's wait instead. Only that task closes
/// the socket, once its wait has taken the descriptor out of the loop's set: nothing waits on
/// a closed descriptor, and nothing acts on a number the kernel may have reused.
final class BluetoothListener: TransportListener, Sendable {
    /// What one `accept` on the listening socket gave: the new descriptor, or -1 and the errno.
    struct Accepted: Sendable {
        var fd: Int32
        var error: Int32
        var remote: String
    }

    let fd: Int32
    let port: UInt16
    private let state = Mutex<(closed: Bool, task: Task<Void, Never>?)>((false, nil))

    /// Starts accepting on `fd`, a listening socket, which the listener now owns.
    /// - Parameters:
    ///   - accept: one `accept` on the listening fd (non-blocking; it must not block).
    ///   - wrap: turns an accepted fd into a connection (nil drops it; the fd is then its to close).
    init(fd: Int32, port: UInt16,
         accept: @escaping @Sendable (Int32) -> Accepted,
         wrap: @escaping @Sendable (Int32, String) -> MessageConnection?,
         onConnection: @escaping @Sendable (MessageConnection) -> Void) {
        self.fd = fd
        self.port = port
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let task = Task.detached { [self] in await acceptLoop(accept: accept, wrap: wrap, onConnection: onConnection) }
        state.withLock { $0.task = task }
    }

    private var isClosed: Bool { state.withLock { $0.closed } }

    private func acceptLoop(accept: @Sendable (Int32) -> Accepted,
                            wrap: @Sendable (Int32, String) -> MessageConnection?,
                            onConnection: @Sendable (MessageConnection) -> Void) async {
        defer { Glibc.close(fd) }
        while !isClosed {
            let a = accept(fd)
            if a.fd < 0 {
                switch a.error {
                case EAGAIN, EWOULDBLOCK:
                    // An hour at most: the wait is re-armed, so a lost wake-up costs no more.
                    _ = await IOLoop.shared.wait(for: PEERLINK_EPOLLIN, on: fd, timeout: 3600)
                case EINTR, ECONNABORTED, ECONNRESET, EPROTO:
                    continue  // that connection went away before it was taken
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    try? await Runtime.sleep(nanoseconds: 100_000_000)  // out of descriptors or memory: later
                default:
                    return  // the listening socket is broken
                }
                continue
            }
            if isClosed { Glibc.close(a.fd); return }
            if let conn = wrap(a.fd, a.remote) { onConnection(conn) }
        }
    }

    /// Stops accepting; the socket is closed as soon as the accept task's wait has ended.
    func close() {
        let task = state.withLock { s -> Task<Void, Never>? in
            s.closed = true
            return s.task
        }
        task?.cancel()
    }
}
