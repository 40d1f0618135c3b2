import Foundation
import PeerLinkCore
import PeerLinkWire

extension Node {
    /// Learns who a device is that advertised only the first bytes of its peer ID (a Bluetooth
    /// advert, PROTOCOL §14.3): connects to the first endpoint that answers, runs the handshake
    /// expecting `prefix`, reads the peer's display name and discovery info from its hello,
    /// and leaves with a CLOSE. Throws `PeerLinkError.unresolved` with every endpoint's
    /// failure when none works (a wrong prefix is `DialFailure.Reason.wrongPrefix`).
    public func resolve(_ endpoints: [TransportEndpoint], expectingPrefix prefix: [UInt8],
                        timeout: Duration = .seconds(10)) async throws -> PeerInfo {
        var failures: [DialFailure] = []
        for endpoint in endpoints {
            guard let transport = transports.first(where: { $0.medium == endpoint.medium }) else {
                failures.append(DialFailure(endpoint: endpoint, reason: .noTransport(endpoint.medium)))
                continue
            }
            do {
                let conn = try await transport.connect(to: endpoint, timeout: timeout)
                let link = try await SecureLink.establish(over: conn, initiator: true, identity: identity,
                                                          hello: hello(for: conn), expectingPrefix: prefix,
                                                          timeout: min(timeout, handshakeTimeout))
                let peer = PeerInfo(peerID: link.remotePeer, displayName: link.remoteHello.displayName,
                                    info: link.remoteHello.discoveryInfo?.entries ?? [:], endpoints: endpoints)
                link.send(.close(reason: .leaving, text: "resolved"))
                await link.connection.flush()
                link.close()
                return peer
            } catch {
                failures.append(DialFailure(endpoint: endpoint, error: error))
            }
        }
        if failures.isEmpty { failures.append(DialFailure(endpoint: nil, reason: .noUsableEndpoint)) }
        throw PeerLinkError.unresolved(prefix: prefix.map { String(format: "%02x", $0) }.joined(), failures: failures)
    }
}
