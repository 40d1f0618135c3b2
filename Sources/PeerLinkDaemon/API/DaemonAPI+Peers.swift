import Foundation
import PeerLink

/// `GET /v1/peers`: the peers of the daemon's service its browser sees now, so that `peerlink
/// browse` lists them without opening radios of its own (the events `peer.found` and
/// `peer.lost` follow the changes).
extension DaemonAPI {
    func peers() async -> HTTPResponse {
        let list = await backend.apiPeers()
        return .json(200, ["peers": list.map { p in
            ["peer": p.info.peerID.description, "name": p.info.displayName, "info": p.info.info,
             "endpoints": p.info.endpoints.map(\.description), "connected": p.connected] as [String: Any]
        }])
    }
}
