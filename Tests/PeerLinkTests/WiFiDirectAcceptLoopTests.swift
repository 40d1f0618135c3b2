import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkWiFiDirect

/// The Wi-Fi Direct listener keeps accepting through an idle hour (an accept that times out)
/// and a connection that fails before it is accepted; it stops when the listener closes.
final class WiFiDirectAcceptLoopTests: XCTestCase {
    func testIdleTimeoutsAndTransientErrorsDoNotEndTheListener() {
        var script: [Result<(fd: Int32, peer: String), Error>] = [
            .failure(TransportError.timedOut(operation: "accept on p2p-wlan0-0", after: .seconds(3600))),
            .success((fd: 7, peer: "fe80::1")),
            .failure(TransportError.system(operation: "accept on p2p-wlan0-0", errno: ECONNABORTED)),
            .failure(TransportError.timedOut(operation: "accept on p2p-wlan0-0", after: .seconds(3600))),
            .success((fd: 8, peer: "fe80::2")),
            .failure(TransportError.closed),
            .success((fd: 9, peer: "never")),
        ]
        var delivered: [String] = []
        WiFiDirectTransport.acceptLoop(accept: { try script.removeFirst().get() }) { _, peer in delivered.append(peer) }
        XCTAssertEqual(delivered, ["fe80::1", "fe80::2"], "both connections, through the timeouts and the aborted one")
        XCTAssertEqual(script.count, 1, "closing the listener ends the loop")
    }
}
