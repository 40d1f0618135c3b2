import CBlueZ
import Foundation
import PeerLink
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Bluetooth L2CAP links over BlueZ kernel sockets (`AF_BLUETOOTH`, `SOCK_SEQPACKET`,
/// `BTPROTO_L2CAP`): Classic (BR/EDR) on a dynamic PSM, or an LE credit-based
/// connection-oriented channel.
///
/// **Reliability**: Classic channels use Enhanced Retransmission Mode (ERTM). Basic mode has
/// no flow control — the kernel drops an SDU that does not fit the receive buffer, and one
/// lost Noise message breaks the link's cipher — so basic mode is not offered. Both ends
/// must be PeerLink (or require ERTM too). LE channels use credit-based flow control with
/// a large receive buffer (6.1 kernels return credits before the reader consumes).
///
/// L2CAP keeps message boundaries, so each Noise message is one L2CAP SDU, with no length
/// prefix. **MTU**: both sides ask the kernel for an incoming MTU of `mtu` (65535 by default,
/// the largest Noise message), so two PeerLink nodes can exchange every legal Noise message
/// unsplit. A remote that offers a smaller MTU leaves the link usable for messages up to that
/// size; a larger message is refused — the connection closes and `receive()` reports
/// `TransportError.unsupported` naming the MTU — rather than being cut (there is no framing to
/// split it with). `L2CAPConnection.outgoingMTU` tells what the remote accepts.
///
/// Endpoints are `TransportEndpoint(medium: .l2cap, host: "AA:BB:CC:DD:EE:FF", port: psm)`.
/// BR/EDR PSMs are odd with an even upper byte (dynamic ones from 0x1001); LE PSMs are
/// 0x0001…0x00FF (dynamic ones from 0x0080). An LE listener is only reachable while its
/// adapter advertises connectably.
public struct L2CAPTransport: Transport {
    /// Which Bluetooth transport the channel runs over.
    public enum Mode: String, Sendable {
        /// Bluetooth Classic, L2CAP Enhanced Retransmission Mode.
        case bredr
        /// Bluetooth Low Energy, LE credit-based flow control (public device addresses).
        case le
    }

    /// Always `.l2cap`.
    public let medium = Medium.l2cap
    /// The local controller to listen and dial from; nil for any.
    public let adapterAddress: String?
    /// Whether it listens and dials on Bluetooth Classic (ERTM) or Low Energy.
    public let mode: Mode
    /// The incoming MTU requested from the kernel (the most one SDU may carry to us).
    public let mtu: UInt16
    /// The SDU size PeerLink sessions aim for on BR/EDR ERTM links: a 4 KiB session fragment
    /// plus its frame header (32) and the Noise tag (16). Measured in the lab (scripts/bench-bt.sh):
    /// 4 KiB fragments moved 1.4–3.8× the data of 600-byte and of 16 KiB ones per second (16 KiB
    /// SDUs are split into many ERTM PDUs and stall the emulated link; raw 16 KiB ERTM even reset).
    public static let preferredSDU = 4096 + 32 + 16
    /// First dynamic PSM tried for BR/EDR when listening on PSM 0.
    public static let firstDynamicPSM: UInt16 = 0x1001
    /// First dynamic PSM for LE.
    public static let firstDynamicLEPSM: UInt16 = 0x0080

    /// - Parameters:
    ///   - adapterAddress: bind to the controller with this address; nil for any. A malformed
    ///     address is reported by `listen` and `connect` as `TransportError.badAddress`.
    ///   - mode: `.bredr` (default) or `.le`.
    ///   - mtu: incoming MTU to ask for; at least 672 for BR/EDR (the L2CAP default) and 23 for LE.
    public init(adapterAddress: String? = nil, mode: Mode = .bredr, mtu: UInt16 = UInt16.max) {
        self.adapterAddress = adapterAddress
        self.mode = mode
        self.mtu = max(mtu, mode == .le ? 23 : 672)
    }

    /// Whether `psm` is a valid PSM for this mode (BR/EDR: odd, upper byte even; LE: 1…255).
    public func isValidPSM(_ psm: UInt16) -> Bool {
        switch mode {
        case .bredr: return psm & 0x0001 == 1 && (psm >> 8) & 0x0001 == 0
        case .le: return (1...0x00FF).contains(psm)
        }
    }

    private var le: Int32 { mode == .le ? 1 : 0 }

    /// Listens on `port` as the PSM, or on the first free dynamic PSM when `port` is 0
    /// (BR/EDR from 0x1001 in steps of 2, LE the odd ones from 0x0081, so that the PSM fits a
    /// Bluetooth advert, PROTOCOL §14.2); the listener's `port` reports it.
    public func listen(port: UInt16, onConnection: @escaping @Sendable (MessageConnection) -> Void) throws -> TransportListener {
        guard port == 0 || isValidPSM(port) else {
            throw TransportError.badAddress(String(format: "L2CAP PSM 0x%04X (%@ PSMs are %@)", port, mode.rawValue,
                                                   mode == .le ? "1…0x00FF" : "odd with an even upper byte, dynamic from 0x1001"))
        }
        let local = try adapterAddress.map(BluetoothAddress.parse)
        let what = "L2CAP \(mode == .le ? "LE" : "BR/EDR") listener on \(adapterAddress ?? "any adapter")"
            + (port == 0 ? " (dynamic PSM)" : String(format: " PSM 0x%04X", port))
        let fd = try BluetoothSocket.open("L2CAP", what: what)
        var ok = false
        defer { if !ok { Glibc.close(fd) } }
        try BluetoothSocket.checkAdapter(local, text: adapterAddress, what: what)
        if port == 0 && mode == .le {
            try bindOddLEPSM(fd, local: local ?? peerlink_bt_any(), what: what)
        } else {
            try bind(fd, local: local ?? peerlink_bt_any(), psm: port, what: what)
        }
        try configure(fd, what: what)
        guard Glibc.listen(fd, 16) == 0 else {
            throw BluetoothSocket.explain(errno, operation: "listen \(what)", adapter: adapterAddress)
        }
        var psm: UInt16 = 0
        guard peerlink_bt_l2cap_local(fd, &psm) == 0 else {
            throw BluetoothSocket.explain(errno, operation: "getsockname \(what)")
        }
        ok = true
        let medium = self.medium
        return BluetoothListener(
            fd: fd, port: psm,
            accept: { lfd in
                var remote = peerlink_bt_any()
                let c = peerlink_bt_l2cap_accept(lfd, &remote)
                return .init(fd: c, error: c < 0 ? errno : 0, remote: BluetoothAddress.format(remote))
            },
            wrap: { c, remote in
                L2CAPTransport.growReceiveBuffer(c)
                return L2CAPConnection(fd: c, medium: medium, remoteDescription: remote, remote: remote)
            },
            onConnection: onConnection)
    }

    /// Dials `endpoint.host` on PSM `endpoint.port` without a thread (a non-blocking connect
    /// the I/O loop waits for), failing after `timeout`.
    public func connect(to endpoint: TransportEndpoint, timeout: Duration) async throws -> MessageConnection {
        guard endpoint.medium == .l2cap else { throw TransportError.badAddress("\(endpoint) is not an L2CAP endpoint") }
        let remote = try BluetoothAddress.parse(endpoint.host)
        guard isValidPSM(endpoint.port) else {
            throw TransportError.badAddress("\(endpoint) (" + (mode == .le ? "LE PSMs are 1…0x00FF)" : "BR/EDR PSMs are odd with an even upper byte)"))
        }
        let local = try adapterAddress.map(BluetoothAddress.parse)
        do {
            return try await dial(remote: remote, psm: endpoint.port, local: local, timeout: timeout.inSeconds)
        } catch {
            // BR/EDR only: LE links have their own, shorter supervision timeout.
            if mode == .le { throw error }
            throw await BluetoothSocket.afterDialFailure(error, remote: BluetoothAddress.format(remote), localAdapter: adapterAddress)
        }
    }

    func dial(remote: peerlink_bdaddr, psm: UInt16, local: peerlink_bdaddr?, timeout: Double) async throws -> L2CAPConnection {
        let remoteText = BluetoothAddress.format(remote)
        let what = String(format: "L2CAP %@ connect to %@ PSM 0x%04X", mode == .le ? "LE" : "BR/EDR", remoteText, psm)
            + (adapterAddress.map { " from \($0)" } ?? "")
        let fd = try BluetoothSocket.open("L2CAP", what: what)
        var ok = false
        defer { if !ok { Glibc.close(fd) } }
        try BluetoothSocket.checkAdapter(local, text: adapterAddress, what: what)
        // LE sockets must be bound to get the LE address type; BR/EDR ones only when an
        // adapter is chosen.
        if local != nil || mode == .le {
            try bind(fd, local: local ?? peerlink_bt_any(), psm: 0, what: what)
        }
        try configure(fd, what: what)
        try await BluetoothSocket.connect(fd: fd, timeout: timeout, what: what, adapter: adapterAddress) {
            peerlink_bt_l2cap_connect(fd, remote, le, psm)
        }
        ok = true
        return L2CAPConnection(fd: fd, medium: medium, remoteDescription: String(format: "%@ PSM 0x%04X", remoteText, psm), remote: remoteText)
    }

    private func bind(_ fd: Int32, local: peerlink_bdaddr, psm: UInt16, what: String) throws {
        guard peerlink_bt_l2cap_bind(fd, local, le, psm) == 0 else {
            let e = errno
            if psm == 0, e == EINVAL || e == EADDRINUSE {
                throw TransportError.system(operation: "\(what): no free dynamic PSM on this adapter", errno: e)
            }
            throw BluetoothSocket.explain(e, operation: "bind \(what)", adapter: adapterAddress)
        }
    }

    /// Binds the first free odd LE PSM from 0x0081 (the kernel's own choice would be 0x0080,
    /// which an advert cannot carry).
    private func bindOddLEPSM(_ fd: Int32, local: peerlink_bdaddr, what: String) throws {
        for psm in stride(from: Self.firstDynamicLEPSM | 1, through: 0x00FF, by: 2) {
            if peerlink_bt_l2cap_bind(fd, local, le, UInt16(psm)) == 0 { return }
            let e = errno
            guard e == EADDRINUSE else { throw BluetoothSocket.explain(e, operation: "bind \(what)", adapter: adapterAddress) }
        }
        throw TransportError.system(operation: "\(what): no free dynamic LE PSM (0x0081–0x00FF, odd) on this adapter", errno: EADDRINUSE)
    }

    /// Mode, MTU and buffer options, after bind (BT_MODE is refused before) and before
    /// connect/listen.
    private func configure(_ fd: Int32, what: String) throws {
        if mode == .le {
            // LE credit-based flow control is the kernel's default for LE sockets; BT_MODE
            // needs bluetooth.enable_ecred=1 on 6.1 kernels, so its absence is not an error.
            _ = peerlink_bt_l2cap_set_le_flowctl(fd)
        }
        guard peerlink_bt_l2cap_configure(fd, le, mtu, mode == .bredr ? 1 : 0) == 0 else {
            throw BluetoothSocket.explain(errno, operation: "set the L2CAP MTU (\(mtu)) and mode for \(what)")
        }
        L2CAPTransport.growReceiveBuffer(fd)
    }

    /// Room for a whole send window of small SDUs: an LE channel on 6.1 kernels returns
    /// credits whether or not the reader keeps up and drops what does not fit the buffer.
    static func growReceiveBuffer(_ fd: Int32) {
        _ = peerlink_bt_grow_receive_buffer(fd, 4 << 20)
    }
}

/// An L2CAP connection: one Noise message per SDU, refused (link closed, reported by
/// `receive()`) when larger than the MTU the remote accepts.
public final class L2CAPConnection: MessageConnection, Sendable {
    private let inner: FDConnection
    var fd: Int32 { inner.fd }
    /// Why the link was closed on a message too large for the remote's MTU, once it was.
    private let refusal = Mutex<TransportError?>(nil)
    /// The most one SDU may carry to us, as negotiated.
    public let incomingMTU: Int
    /// The most one SDU may carry to the remote, as negotiated (what the remote accepts).
    public let outgoingMTU: Int
    /// The largest session frame PeerLink asks the remote to send on this link (hello TLV 2):
    /// on BR/EDR ERTM, SDUs of `L2CAPTransport.preferredSDU` (a 4 KiB fragment plus framing
    /// and the Noise tag) or the incoming MTU if smaller; otherwise (LE) the incoming MTU.
    public var preferredMaxFrame: Int? {
        let sdu = isERTM ? min(incomingMTU, L2CAPTransport.preferredSDU) : incomingMTU
        return max(0, sdu - 16)   // the Noise tag
    }
    private let isERTM: Bool

    init(fd: Int32, medium: Medium, remoteDescription: String, remote: String) {
        isERTM = peerlink_bt_l2cap_mode(fd) == 3   // L2CAP_MODE_ERTM
        var i: UInt16 = 0, o: UInt16 = 0
        if peerlink_bt_l2cap_get_mtu(fd, &i, &o) != 0 { i = 672; o = 672 }
        incomingMTU = Int(i)
        outgoingMTU = Int(o)
        inner = FDConnection(fd: fd, medium: medium, remoteDescription: remoteDescription, lengthPrefixed: false,
                             holding: StaleACL.register(remote: remote))
    }

    /// The medium of the transport that made it (`.l2cap`).
    public var medium: Medium { inner.medium }
    public var remoteDescription: String { inner.remoteDescription }
    public var queuedBytes: Int { inner.queuedBytes }

    public func enqueue(_ message: [UInt8]) { enqueue(prefixed: [message]) }

    /// SDUs keep message boundaries: no length prefix; several go to the socket together.
    public func enqueue(prefixed messages: [[UInt8]]) {
        if let message = messages.first(where: { $0.count > outgoingMTU }) {
            refusal.withLock { refusal in
                if refusal == nil {
                    refusal = .unsupported("a message of \(message.count) bytes does not fit the L2CAP MTU of \(outgoingMTU) bytes "
                                           + "that \(remoteDescription) accepts; the link was closed")
                }
            }
            inner.close()
            return
        }
        inner.enqueue(prefixed: messages)
    }

    public func flush() async { await inner.flush() }

    public func receive() async throws -> [UInt8]? {
        try await receiveBatch(limit: 1)?.first
    }

    public func receiveBatch(limit: Int) async throws -> [[UInt8]]? {
        let result: [[UInt8]]?
        do {
            result = try await inner.receiveBatch(limit: limit)
        } catch {
            if let r = refusal.withLock({ $0 }) { throw r }
            throw error
        }
        if result == nil, let r = refusal.withLock({ $0 }) { throw r }
        return result
    }

    public func close() { inner.close() }
}
