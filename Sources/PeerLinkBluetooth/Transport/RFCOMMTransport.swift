import CBlueZ
import Foundation
import PeerLink
#if canImport(Glibc)
import Glibc
#endif

/// Bluetooth Classic RFCOMM links over BlueZ kernel sockets (`AF_BLUETOOTH`, `SOCK_STREAM`,
/// `BTPROTO_RFCOMM`).
///
/// RFCOMM is a byte stream, so every Noise message carries the 2-byte big-endian length
/// prefix, as on TCP. Endpoints are `TransportEndpoint(medium: .rfcomm, host: "AA:BB:CC:DD:EE:FF",
/// port: channel)` with channels 1…30. Writes go out in chunks of at most 8 KiB (large
/// single RFCOMM writes can stall in BlueZ's emulated controllers; real radios don't mind).
///
/// Errors: on a kernel without Bluetooth every call throws `TransportError.unsupported`
/// explaining so; a missing or powered-off adapter, an unreachable remote and refused or
/// unauthorised connections throw `TransportError.system` with the errno and what to do;
/// malformed addresses throw `TransportError.badAddress`.
public struct RFCOMMTransport: Transport {
    /// Always `.rfcomm`.
    public let medium = Medium.rfcomm
    /// The local controller to listen and dial from ("00:AA:01:01:00:01"); nil for any.
    public let adapterAddress: String?
    /// Largest single `send` on the socket.
    public static let maxWriteChunk = 8192
    /// Highest RFCOMM server channel.
    public static let maxChannel: UInt16 = 30

    /// - Parameter adapterAddress: bind to the controller with this address (e.g. hci1's);
    ///   nil lets the kernel choose (any controller for listening, a routed one for dialling).
    ///   A malformed address is reported by `listen` and `connect` as `TransportError.badAddress`.
    public init(adapterAddress: String? = nil) {
        self.adapterAddress = adapterAddress
    }

    /// Listens on RFCOMM channel `port` (1…30), or on the first free channel when `port` is 0
    /// (the kernel picks it at `listen`; the listener's `port` reports it).
    public func listen(port: UInt16, onConnection: @escaping @Sendable (MessageConnection) -> Void) throws -> TransportListener {
        guard port <= RFCOMMTransport.maxChannel else {
            throw TransportError.badAddress("RFCOMM channel \(port) (channels are 1…30, or 0 for the first free one)")
        }
        let local = try adapterAddress.map(BluetoothAddress.parse)
        let what = "RFCOMM listener on \(adapterAddress ?? "any adapter") channel \(port == 0 ? "(any)" : String(port))"
        let fd = try BluetoothSocket.open("RFCOMM", what: what)
        var ok = false
        defer { if !ok { Glibc.close(fd) } }
        try BluetoothSocket.checkAdapter(local, text: adapterAddress, what: what)
        guard peerlink_bt_rfcomm_bind(fd, local ?? peerlink_bt_any(), UInt8(port)) == 0 else {
            throw BluetoothSocket.explain(errno, operation: "bind \(what)", adapter: adapterAddress)
        }
        guard Glibc.listen(fd, 16) == 0 else {
            let e = errno
            if port == 0, e == EINVAL {
                throw TransportError.system(operation: "\(what): all RFCOMM channels 1…30 are taken on this adapter", errno: e)
            }
            throw BluetoothSocket.explain(e, operation: "listen \(what)", adapter: adapterAddress)
        }
        var channel: UInt8 = 0
        guard peerlink_bt_rfcomm_local(fd, &channel) == 0 else {
            throw BluetoothSocket.explain(errno, operation: "getsockname \(what)")
        }
        ok = true
        return BluetoothListener(
            fd: fd, port: UInt16(channel),
            accept: { lfd in
                var remote = peerlink_bt_any()
                let c = peerlink_bt_rfcomm_accept(lfd, &remote)
                return .init(fd: c, error: c < 0 ? errno : 0, remote: BluetoothAddress.format(remote))
            },
            wrap: { c, remote in
                FDConnection(fd: c, medium: .rfcomm, remoteDescription: remote, lengthPrefixed: true,
                             maxWriteChunk: RFCOMMTransport.maxWriteChunk, holding: StaleACL.register(remote: remote))
            },
            onConnection: onConnection)
    }

    /// Dials `endpoint.host` on RFCOMM channel `endpoint.port` without a thread (a non-blocking
    /// connect the I/O loop waits for), failing after `timeout` (paging, pairing and
    /// the RFCOMM session setup all count).
    public func connect(to endpoint: TransportEndpoint, timeout: Duration) async throws -> MessageConnection {
        guard endpoint.medium == .rfcomm else {
            throw TransportError.badAddress("\(endpoint) is not an RFCOMM endpoint")
        }
        let remote = try BluetoothAddress.parse(endpoint.host)
        guard (1...RFCOMMTransport.maxChannel).contains(endpoint.port) else {
            throw TransportError.badAddress("\(endpoint) (RFCOMM channels are 1…30)")
        }
        let local = try adapterAddress.map(BluetoothAddress.parse)
        do {
            return try await RFCOMMTransport.dialWhenFree(remote: remote, channel: UInt8(endpoint.port), local: local,
                                                          localText: adapterAddress, timeout: timeout.inSeconds)
        } catch {
            throw await BluetoothSocket.afterDialFailure(error, remote: BluetoothAddress.format(remote), localAdapter: adapterAddress)
        }
    }

    /// How long a dial waits for the kernel to release this device's previous connection to
    /// the same remote channel (EBUSY: RFCOMM allows one per device pair and channel, and a
    /// link just closed — the previous session with the same peer — is released a moment later).
    static let busyWait = 3.0

    /// `dial`, tried again for up to `busyWait` seconds within `timeout` while the previous
    /// connection to the same device is still being wound down: the local kernel still holds
    /// the remote channel (EBUSY), or, when this process has or had within `busyWait` a link
    /// to that device, the remote refused the channel or reset it before it opened
    /// (ECONNREFUSED, ECONNRESET: its side of the old channel is still closing — seen in the
    /// lab when both ends closed the previous channel at once). Nothing was exchanged on a
    /// dial that failed, so a redial is safe. From a device not recently met, both are final.
    static func dialWhenFree(remote: peerlink_bdaddr, channel: UInt8, local: peerlink_bdaddr?, localText: String?,
                             timeout: Double) async throws -> FDConnection {
        try await whenFree(remote: BluetoothAddress.format(remote), timeout: timeout) {
            try await dial(remote: remote, channel: channel, local: local, localText: localText, timeout: timeout)
        }
    }

    /// `attempt` (one dial to `remote`), repeated as `dialWhenFree` says.
    static func whenFree<T: Sendable>(remote: String, timeout: Double, _ attempt: () async throws -> T) async throws -> T {
        let deadline = ProcessInfo.processInfo.systemUptime + min(timeout, busyWait)
        let reconnecting = StaleACL.connectedRecently(remote, within: busyWait)
        var pause = 0.1
        while true {
            do {
                return try await attempt()
            } catch let TransportError.system(_, e) where (e == EBUSY || ((e == ECONNREFUSED || e == ECONNRESET) && reconnecting))
                && ProcessInfo.processInfo.systemUptime + pause < deadline {
                try await Runtime.sleep(seconds: pause)
                pause = min(pause * 2, 0.8)
            }
        }
    }

    static func dial(remote: peerlink_bdaddr, channel: UInt8, local: peerlink_bdaddr?, localText: String?, timeout: Double) async throws -> FDConnection {
        let remoteText = BluetoothAddress.format(remote)
        let what = "RFCOMM connect to \(remoteText) channel \(channel)" + (localText.map { " from \($0)" } ?? "")
        let fd = try BluetoothSocket.open("RFCOMM", what: what)
        var ok = false
        defer { if !ok { Glibc.close(fd) } }
        try BluetoothSocket.checkAdapter(local, text: localText, what: what)
        if let local {
            guard peerlink_bt_rfcomm_bind(fd, local, 0) == 0 else {
                throw BluetoothSocket.explain(errno, operation: "bind \(what)", adapter: localText)
            }
        }
        try await BluetoothSocket.connect(fd: fd, timeout: timeout, what: what, adapter: localText) {
            peerlink_bt_rfcomm_connect(fd, remote, channel)
        }
        ok = true
        return FDConnection(fd: fd, medium: .rfcomm, remoteDescription: "\(remoteText) channel \(channel)", lengthPrefixed: true,
                            maxWriteChunk: maxWriteChunk, holding: StaleACL.register(remote: remoteText))
    }
}
