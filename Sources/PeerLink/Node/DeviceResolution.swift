import Foundation
import PeerLinkCore
import PeerLinkWire

extension Node {
    /// Learns who a device is that advertised only the first bytes of its peer ID (a Bluetooth
    /// advert, PROTOCOL §14.3): connects to the first endpoint that answers, runs the handshake
    /// expecting `prefix`, reads the peer's display name and discovery info from its hello,
    /// and leaves with a CLOSE. Throws `PeerLinkError.unresolved` with every endpoint's
    /// reason when none works (wrong prefix included: `LinkError.unexpectedPeerPrefix`).
    public func resolve(_ endpoints: [TransportEndpoint], expectingPrefix prefix: [UInt8],
                        timeout: Duration = .seconds(10)) async throws -> PeerInfo {
        var reasons: [String] = []
        for endpoint in endpoints {
            guard let transport = transports.first(where: { $0.medium == endpoint.medium }) else {
                reasons.append("\(endpoint): this node has no \(endpoint.medium.rawValue) transport")
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
                reasons.append("\(endpoint): \(error)")
            }
        }
        if reasons.isEmpty { reasons.append("no endpoint to try") }
        throw PeerLinkError.unresolved(prefix: prefix.map { String(format: "%02x", $0) }.joined(), reasons: reasons)
    }
}
