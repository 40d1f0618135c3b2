import Foundation
import PeerLink
#if canImport(Glibc)
import Glibc
#endif

extension Medium {
    /// Links over a Wi-Fi Direct group (or a soft-AP) that two peers negotiate inside their
    /// session: TCP between the group interfaces' IPv6 link-local addresses.
    public static let wifiDirect = register("wifi-direct", traits: MediumTraits(
        linkClass: .ip, typicalBytesPerSecond: 5_000_000, negotiated: true, endpoint: .ipAddress))
}

/// Dials and listens on a group interface. Endpoints are `TransportEndpoint(medium:
/// .wifiDirect, host: "fe80::…%p2p-wlan0-0", port:)`: the zone names the local group
/// interface, which the socket is also bound to (`LinkLocalSockets`).
public struct WiFiDirectTransport: Transport {
    /// Always `.wifiDirect`.
    public let medium = Medium.wifiDirect
    /// The group interface a listener binds to (nil: this transport only dials).
    public let interface: String?

    /// Makes a transport that listens on the group interface `interface`, or with nil one that
    /// only dials.
    public init(interface: String? = nil) { self.interface = interface }

    public func listen(port: UInt16, onConnection: @escaping @Sendable (MessageConnection) -> Void) throws -> TransportListener {
        guard let interface else { throw TransportError.unsupported("a Wi-Fi Direct listener needs its group interface") }
        let listener = try LinkLocalSockets.listen(interface: interface, port: port)
        let wrapped = WiFiDirectListener(listener)
        // A thread of its own for as long as the group lasts (one per group): an
        // accept that waits for hours must not hold one of the blocking pool's few threads.
        BlockingCall.thread("pl.wifi.accept") {
            Self.acceptLoop(accept: { try listener.acceptBlocking(timeout: 3600) }) { fd, peer in
                onConnection(FDConnection(fd: fd, medium: .wifiDirect, remoteDescription: "[\(peer)]%\(interface)", lengthPrefixed: true,
                                          remoteHost: peer))
            }
        }
        return wrapped
    }

    /// Hands each accepted connection to `deliver` until the listener is closed or broken. An
    /// idle wait that times out (a group with nobody joining for an hour) and the errors a
    /// single connection can cause (aborted before accept, out of descriptors for a moment)
    /// do not end it.
    static func acceptLoop(accept: () throws -> (fd: Int32, peer: String), deliver: (Int32, String) -> Void) {
        while true {
            do {
                let (fd, peer) = try accept()
                deliver(fd, peer)
            } catch TransportError.timedOut {
                continue
            } catch let TransportError.system(_, e) where [ECONNABORTED, EINTR, EMFILE, ENFILE, EPROTO, ENOBUFS, ENOMEM].contains(e) {
                usleep(100_000)
            } catch {
                return  // closed, or the interface is gone
            }
        }
    }

    public func connect(to endpoint: TransportEndpoint, timeout: Duration) async throws -> MessageConnection {
        let parts = endpoint.host.split(separator: "%", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[1].isEmpty else {
            throw TransportError.badAddress("\(endpoint.host): a Wi-Fi Direct endpoint names its group interface as the zone (fe80::1%p2p-wlan0-0)")
        }
        let fd = try await LinkLocalSockets.connect(to: parts[0], port: endpoint.port, interface: parts[1], timeout: timeout)
        return FDConnection(fd: fd, medium: .wifiDirect, remoteDescription: "[\(endpoint.host)]:\(endpoint.port)", lengthPrefixed: true,
                            remoteHost: parts[0])
    }
}

final class WiFiDirectListener: TransportListener, @unchecked Sendable {
    let listener: LinkLocalListener
    var port: UInt16 { listener.port }
    init(_ l: LinkLocalListener) { listener = l }
    func close() { listener.close() }
}
