import CBlueZ
import CPeerLinkSys
import Foundation
import PeerLink
#if canImport(Glibc)
import Glibc
#endif

/// Bluetooth device addresses ("00:AA:01:01:00:01") as BlueZ's sockets want them.
public enum BluetoothAddress {
    /// Checks and normalises an address: exactly six colon-separated pairs of hex digits
    /// (either case), returned upper-case.
    /// - Throws: `TransportError.badAddress` for anything else.
    public static func normalize(_ text: String) throws -> String { format(try parse(text)) }

    /// Parses exactly six colon-separated pairs of hex digits (either case).
    static func parse(_ text: String) throws -> peerlink_bdaddr {
        var address = peerlink_bt_any()
        let ok = text.utf8.count == 17 && !text.utf8.contains(0) && text.withCString { peerlink_bt_parse_address($0, &address) } == 0
        guard ok else { throw TransportError.badAddress("\(text) (a Bluetooth address is six hex pairs such as 00:AA:01:01:00:01)") }
        return address
    }

    /// The canonical upper-case text form of an address.
    static func format(_ address: peerlink_bdaddr) -> String {
        var a = address
        var out = [CChar](repeating: 0, count: 18)
        out.withUnsafeMutableBufferPointer { buf in
            if let base = buf.baseAddress { peerlink_bt_format_address(&a, base) }
        }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True when `text` is a well-formed address.
    public static func isValid(_ text: String) -> Bool { (try? parse(text)) != nil }
}

/// Socket plumbing shared by the RFCOMM and L2CAP transports: socket creation, local adapter
/// checks, non-blocking connect with a deadline, and errors that say what to do.
enum BluetoothSocket {
    /// Opens an `AF_BLUETOOTH` socket, explaining the failure when the kernel has no
    /// Bluetooth or lacks the protocol.
    static func open(_ protocolName: String, what: String) throws -> Int32 {
        let fd = protocolName == "RFCOMM" ? peerlink_bt_rfcomm_socket() : peerlink_bt_l2cap_socket()
        guard fd >= 0 else {
            let e = errno
            if e == EPROTONOSUPPORT || e == ESOCKTNOSUPPORT {
                throw TransportError.unsupported(
                    "\(what): the kernel's Bluetooth stack has no \(protocolName) (socket failed: \(String(cString: strerror(e)))); "
                        + "load its module (modprobe \(protocolName == "RFCOMM" ? "rfcomm" : "bluetooth"))")
            }
            throw explain(e, operation: "socket for \(what)")
        }
        return fd
    }

    /// Checks that the local controller to use exists and is powered, so that a listener on a
    /// missing adapter fails now instead of silently never accepting. Diagnostic failures
    /// other than "no Bluetooth in the kernel" are ignored (the socket call reports them).
    static func checkAdapter(_ adapter: peerlink_bdaddr?, text: String?, what: String) throws {
        var index: Int32 = -1
        let state: Int32
        if var a = adapter {
            state = peerlink_bt_adapter_state(&a, &index)
        } else {
            state = peerlink_bt_adapter_state(nil, &index)
        }
        switch state {
        case 1:
            return
        case 0:
            let name = index >= 0 ? "hci\(index)" : "the adapter"
            if let text {
                throw TransportError.system(
                    operation: "\(what): Bluetooth adapter \(name) (\(text)) is powered off or blocked — power it on "
                        + "(`bluetoothctl power on`, `btmgmt --index \(max(index, 0)) power on`, `rfkill unblock bluetooth`)",
                    errno: ENETDOWN)
            }
            throw TransportError.system(
                operation: "\(what): every Bluetooth adapter is powered off or blocked — power one on "
                    + "(`bluetoothctl power on`, `rfkill unblock bluetooth`)",
                errno: ENETDOWN)
        case -2:
            if let text {
                throw TransportError.system(
                    operation: "\(what): no Bluetooth adapter has the address \(text) (list them with `btmgmt info` or `bluetoothctl list`)",
                    errno: ENODEV)
            }
            throw TransportError.system(operation: "\(what): this machine has no Bluetooth adapter (`btmgmt info` lists none)",
                                        errno: ENODEV)
        default:
            if errno == EAFNOSUPPORT { throw explain(EAFNOSUPPORT, operation: what) }
        }
    }

    /// Connects a socket with a deadline without holding a thread: non-blocking `connect`, a
    /// wait on the I/O loop until the socket is writable (or has failed), then `SO_ERROR`. The
    /// socket stays non-blocking. Cancelling the task abandons the connect
    /// (`CancellationError`); the caller closes the socket.
    static func connect(fd: Int32, timeout: Double, what: String, adapter: String?,
                        _ call: () -> Int32) async throws {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        guard call() != 0 else { return }
        let e = errno
        guard e == EINPROGRESS || e == EAGAIN else { throw explain(e, operation: what, adapter: adapter) }
        switch await IOLoop.shared.wait(for: PEERLINK_EPOLLOUT, on: fd, timeout: timeout) {
        case .ready: break
        case .timedOut: throw TransportError.timedOut(operation: what, after: .seconds(timeout))
        case .cancelled: throw CancellationError()
        }
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 { err = errno }
        if err != 0 { throw explain(err, operation: what, adapter: adapter) }
    }

    /// `error`, or, when it is a BR/EDR dial's timeout, `StaleACL.afterTimeout`'s account of
    /// the stale link it dropped (asking bluetoothd happens on the blocking pool).
    static func afterDialFailure(_ error: Error, remote: String, localAdapter: String?) async -> Error {
        guard case TransportError.timedOut = error else { return error }
        return await BlockingCall.run("pl.bt.stale-acl") {
            StaleACL.afterTimeout(error, remote: remote, localAdapter: localAdapter)
        }
    }

    /// Turns an errno from a Bluetooth socket call into an error that says what to do.
    static func explain(_ e: Int32, operation: String, adapter: String? = nil) -> TransportError {
        let local = adapter.map { "the local adapter \($0)" } ?? "the local adapter"
        switch e {
        case EAFNOSUPPORT:
            return .unsupported(
                "\(operation): the kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed with EAFNOSUPPORT). "
                    + "Use a kernel with Bluetooth (CONFIG_BT) and its modules loaded (`modprobe bluetooth rfcomm`); "
                    + "containers and many VMs have none — on a development machine run the Bluetooth tests in the lab (scripts/bt-lab.sh)")
        case EHOSTUNREACH:
            return .system(operation: "\(operation): no usable route — \(local) is missing or powered off "
                            + "(check `btmgmt info`; power it on with `bluetoothctl power on`)", errno: e)
        case ENETDOWN:
            return .system(operation: "\(operation): \(local) is down (power it on with `bluetoothctl power on` or `rfkill unblock bluetooth`)",
                           errno: e)
        case EHOSTDOWN:
            return .system(operation: "\(operation): the remote device did not answer (page timeout): it is out of range, powered off "
                            + "or not connectable — or \(local) is not up", errno: e)
        case ENODEV:
            return .system(operation: "\(operation): no such Bluetooth adapter (`btmgmt info` lists them)", errno: e)
        case ECONNREFUSED:
            return .system(operation: "\(operation): nothing listens there (wrong channel/PSM, or the peer stopped listening), "
                            + "or the peer refused to pair", errno: e)
        case EACCES, EPERM:
            return .system(operation: "\(operation): permission denied — pairing was rejected by one side. PeerLink keeps no "
                            + "pairing, but one of the two devices holds a bond (a stored key) the other lacks: run `peerlink doctor` "
                            + "on both and remove the bond where it names one (`bluetoothctl remove ADDRESS`). "
                            + "Binding a reserved PSM/channel also needs CAP_NET_BIND_SERVICE", errno: e)
        case EBUSY:
            return .system(operation: "\(operation): this device already has a connection to that remote channel "
                            + "(RFCOMM allows one per device pair and channel)", errno: e)
        case EADDRINUSE:
            return .system(operation: "\(operation): that channel/PSM is already taken on this adapter (pass 0 to pick a free one)", errno: e)
        default:
            return .system(operation: operation, errno: e)
        }
    }
}
