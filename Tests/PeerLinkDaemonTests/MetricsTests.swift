import Foundation
import Logging
import PeerLink
import PeerLinkStore
import PeerLinkWire
import TestKit
import XCTest
@testable import PeerLinkDaemon

/// The metrics endpoint: the text format, counters moved by the daemon's events, gauges from
/// a snapshot, the TCP server's answers, binding and retrying, and the docs' list.
final class MetricsTests: XCTestCase {
    func server(_ metrics: DaemonMetrics) throws -> MetricsHTTPServer {
        let s = try MetricsHTTPServer(address: MetricsAddress(host: "127.0.0.1", port: 0)) { metrics.exposition() }
        s.start()
        addTeardownBlock { s.stop() }
        return s
    }

    func testAScrapeOnLoopbackIsTheTextFormatAndCountersMoveWithEvents() throws {
        let metrics = DaemonMetrics(version: "9.9-test")
        let s = try server(metrics)
        XCTAssertNotEqual(s.address.port, 0, "the kernel's port is known")

        guard let first = scrape(port: s.address.port) else { return XCTFail("no answer") }
        XCTAssertEqual(first.status, 200)
        XCTAssertTrue(first.head.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"), first.head)
        XCTAssertTrue(first.body.contains("# HELP peerlink_items_delivered_total ") == false, "no series yet, no family")
        XCTAssertTrue(first.body.contains("# TYPE peerlink_build_info gauge"), first.body)
        XCTAssertEqual(first.value(#"peerlink_build_info{version="9.9-test",arch="\#(DaemonMetrics.arch)",os="\#(DaemonMetrics.os)"}"#), 1)
        XCTAssertEqual(first.value(#"peerlink_errors_total{kind="ledger"}"#), 0, "error kinds are there from the start")
        XCTAssertGreaterThan(first.value("peerlink_start_time_seconds") ?? 0, 1_700_000_000)

        let events = DaemonEvents()
        events.observe { metrics.record($0) }
        events.publish(.peerConnected, peer: "PEERB", name: "beta")
        events.publish(.itemQueued, peer: "PEERB", item: "i1", size: 10)
        events.publish(.itemDelivered, peer: "PEERB", item: "i1", size: 10)
        events.publish(.itemDelivered, peer: "PEERB", item: "i2", size: 5)
        events.publish(.itemExpired, peer: "PEERC", item: "i3")
        events.publish(.itemReceived, peer: "PEERC", item: "i4", size: 7)
        metrics.error(.stream)
        let one = PeerID(digest: Array(repeating: 1, count: 20))
        metrics.observe(.carrierChanged(one, link: 1, role: .bulk, reason: CarrierReason(.oldestLiveLink)))
        metrics.observe(.carrierChanged(one, link: 3, role: .bulk, reason: CarrierReason(.fastestForBulk(bytesPerSecond: 5e6, frame: nil))))
        metrics.observe(.carrierChanged(one, link: 1, role: .reliable, reason: CarrierReason(.oldestLiveLink)))
        metrics.observe(.peerStateChanged(one, displayName: "one", state: .notConnected))
        metrics.observe(.carrierChanged(one, link: 4, role: .bulk, reason: CarrierReason(.oldestLiveLink)))
        metrics.observe(.linkChanged(PeerID(digest: Array(repeating: 1, count: 20)), link: 2, medium: Medium(rawValue: "tcp"), up: true, reason: .authenticated(remote: "127.0.0.1:4000")))
        metrics.update(MetricsSnapshot(peersConnected: 1, peersFound: 2, linksUp: ["tcp": 2],
                                       pending: [OutboundCount(peer: PeerID(digest: Array(repeating: 2, count: 20)), state: .queued, count: 3)]))

        guard let second = scrape(port: s.address.port) else { return XCTFail("no answer") }
        let pending = PeerID(digest: Array(repeating: 2, count: 20)).description
        let expected: [(String, Double)] = [
            (#"peerlink_items_queued_total{peer="PEERB"}"#, 1),
            (#"peerlink_items_delivered_total{peer="PEERB"}"#, 2),
            (#"peerlink_items_expired_total{peer="PEERC"}"#, 1),
            (#"peerlink_items_received_total{peer="PEERC"}"#, 1),
            (#"peerlink_item_bytes_total{direction="sent"}"#, 15),
            (#"peerlink_item_bytes_total{direction="received"}"#, 7),
            ("peerlink_peer_sessions_total", 1),
            ("peerlink_peers_seen", 1),
            ("peerlink_peers_connected", 1),
            ("peerlink_peers_found", 2),
            (#"peerlink_links_up{medium="tcp"}"#, 2),
            (#"peerlink_link_changes_total{medium="tcp",change="up"}"#, 1),
            (#"peerlink_handovers_total{role="bulk"}"#, 1),
            (#"peerlink_errors_total{kind="stream"}"#, 1),
            ("peerlink_items{peer=\"\(pending)\",state=\"queued\"}", 3),
        ]
        for (series, value) in expected { XCTAssertEqual(second.value(series), value, series + "\n" + second.body) }
        XCTAssertNil(second.value(#"peerlink_handovers_total{role="reliable"}"#), "a session's first carrier is no handover")
        XCTAssertTrue(second.body.contains("# TYPE peerlink_items_delivered_total counter"), second.body)
        XCTAssertTrue(second.body.contains("# HELP peerlink_items_delivered_total Outbound items the peer confirmed"), second.body)

        // Gone from the next snapshot: the series reads 0, it does not keep its old value.
        metrics.update(MetricsSnapshot())
        guard let third = scrape(port: s.address.port) else { return XCTFail("no answer") }
        XCTAssertEqual(third.value(#"peerlink_links_up{medium="tcp"}"#), 0)
        XCTAssertEqual(third.value("peerlink_items{peer=\"\(pending)\",state=\"queued\"}"), 0)
        XCTAssertEqual(third.value(#"peerlink_items_delivered_total{peer="PEERB"}"#), 2, "counters keep counting")
    }

    func testOnlyGetMetricsIsServedAndBadRequestsAreRefused() throws {
        let s = try server(DaemonMetrics())
        let port = s.address.port
        XCTAssertEqual(scrape(port: port, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n")?.status, 404)
        let post = scrape(port: port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(post?.status, 405)
        XCTAssertTrue(post?.head.contains("Allow: GET") ?? false, post?.head ?? "")
        XCTAssertEqual(scrape(port: port, "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")?.status, 413, "no bodies")
        XCTAssertEqual(scrape(port: port, "GET /metrics HTTP/1.1\nHost: x\n\n")?.status, 400, "bare LF")
        XCTAssertEqual(scrape(port: port, "GET /metrics HTTP/1.1\r\n\r\n")?.status, 400, "no Host")
        let big = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + String(repeating: "a", count: 9000) + "\r\n\r\n"
        XCTAssertEqual(scrape(port: port, big)?.status, 431)
        XCTAssertEqual(scrape(port: port, "GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n")?.status, 200, "a query is ignored")
    }

    func testRoutingIsPure() {
        func request(_ method: String, _ path: String) -> HTTPRequest {
            HTTPRequest(method: method, target: path, path: path, query: [:], headers: [], body: [])
        }
        XCTAssertNil(MetricsHTTPServer.route(request("GET", "/metrics")))
        XCTAssertEqual(MetricsHTTPServer.route(request("HEAD", "/metrics"))?.status, 405)
        XCTAssertEqual(MetricsHTTPServer.route(request("GET", "/metrics/")).map(\.status), 404)
        XCTAssertEqual(MetricsHTTPServer.route(request("DELETE", "/v1/items")).map(\.status), 404)
    }

    func testAddresses() {
        XCTAssertEqual(MetricsAddress(parsing: "127.0.0.1:9464"), MetricsAddress(host: "127.0.0.1", port: 9464))
        XCTAssertEqual(MetricsAddress(parsing: "[::1]:9100"), MetricsAddress(host: "::1", port: 9100))
        XCTAssertEqual(MetricsAddress(parsing: "localhost:1"), MetricsAddress(host: "localhost", port: 1))
        XCTAssertEqual(MetricsAddress(host: "::1", port: 9100).description, "[::1]:9100")
        for bad in ["9464", ":9464", "::1:9464", "[::1:9464", "host:", "host:70000", "host:x", "[]:1"] {
            XCTAssertNil(MetricsAddress(parsing: bad), bad)
        }
    }

    func testTheConfigurationTakesTheAddressesTheEndpointTakes() throws {
        for (text, expected) in [("metrics = true", "127.0.0.1:9464"), ("metrics = \"[::1]:9100\"", "[::1]:9100"),
                                 ("metrics = \"localhost:9100\"", "localhost:9100")] {
            let c = try DaemonConfig.parse(text, file: "field.toml", baseDirectory: "/")
            XCTAssertEqual(c.metrics, expected)
            XCTAssertNotNil(c.metrics.flatMap(MetricsAddress.init(parsing:)), text)
        }
        XCTAssertNil(try DaemonConfig.parse("metrics = false", file: "field.toml", baseDirectory: "/").metrics)
    }

    /// A taken port: the endpoint logs an error once, the daemon goes on, and the bind
    /// succeeds on a later try once the port is free.
    func testATakenPortIsLoggedAndTriedAgain() async throws {
        let holder = try MetricsHTTPServer(address: MetricsAddress(host: "127.0.0.1", port: 0)) { [] }
        let address = holder.address
        let lines = LogLines()
        let log = Logger(label: "metrics") { JournalLogHandler(label: $0, level: .debug, journal: false, write: lines.add) }
        let metrics = DaemonMetrics()
        let endpoint = MetricsEndpoint(address: address, log: log, retry: .milliseconds(100)) { metrics.exposition() }
        defer { endpoint.stop() }
        XCTAssertNil(endpoint.server)
        XCTAssertEqual(lines.all.filter { $0.contains("metrics not served") }.count, 1, "\(lines.all)")
        try await Task.sleep(for: .milliseconds(350))
        XCTAssertEqual(lines.all.filter { $0.contains("metrics not served") }.count, 1, "logged once, not at every try")
        holder.stop()
        let bound = await eventually(within: 10) { endpoint.server != nil }
        XCTAssertTrue(bound, "\(lines.all)")
        XCTAssertEqual(scrape(port: address.port)?.status, 200)
        XCTAssertTrue(lines.all.contains { $0.contains("metrics listening") }, "\(lines.all)")
    }

    /// Unbounded label values from outside are capped.
    func testPeerAndMediumLabelsAreBounded() {
        let metrics = DaemonMetrics()
        for n in 0..<(DaemonMetrics.maxPeers + 10) { metrics.record(DaemonEvent(id: 1, kind: .itemQueued, time: 0, peer: "P\(n)")) }
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("peerlink_items_queued_total{") }
        XCTAssertEqual(lines.count, DaemonMetrics.maxPeers + 1, "the cap plus peer=\"other\"")
        XCTAssertTrue(text.contains(#"peerlink_items_queued_total{peer="other"} 10"#), text)
        XCTAssertEqual(metrics.mediumLabel(String(repeating: "m", count: 100)).count, 32)
    }

    /// Two daemons on the in-memory medium: after a delivery, the holder's scrape shows it
    /// delivered, the receiver's shows it received, both show the peer and its link.
    func testADeliveryBetweenTwoDaemonsShowsInTheirMetrics() async throws {
        let dir = scratch(self), net = MemoryNetwork(), disc = MemoryDiscovery()
        let a = try await FieldNode("alpha", net: net, discovery: disc, root: dir + "/a")
        let b = try await FieldNode("beta", net: net, discovery: disc, root: dir + "/b")
        try a.drop("notes.txt", bytes: Array(repeating: 7, count: 1000), for: b.peer)
        await b.waitForLog("item received")
        await a.waitForLog("delivered")
        let s = try MetricsHTTPServer(address: MetricsAddress(host: "127.0.0.1", port: 0)) { await a.daemon.metricsText() }
        s.start()
        defer { s.stop() }
        guard let holder = scrape(port: s.address.port) else { return XCTFail("no answer") }
        XCTAssertEqual(holder.value("peerlink_items_delivered_total{peer=\"\(b.peer)\"}"), 1, holder.body)
        XCTAssertEqual(holder.value("peerlink_items_queued_total{peer=\"\(b.peer)\"}"), 1, holder.body)
        XCTAssertEqual(holder.value(#"peerlink_item_bytes_total{direction="sent"}"#), 1000, holder.body)
        XCTAssertEqual(holder.value("peerlink_peers_connected"), 1, holder.body)
        XCTAssertGreaterThanOrEqual(holder.body.split(separator: "\n").filter { $0.hasPrefix("peerlink_links_up{") && !$0.hasSuffix(" 0") }.count, 1, holder.body)
        let wire = holder.value(#"peerlink_wire_bytes_total{direction="sent",medium="memory"}"#) ?? 0
        XCTAssertGreaterThanOrEqual(wire, 1000, "the item's bytes crossed the wire\n" + holder.body)
        XCTAssertGreaterThanOrEqual(holder.value(#"peerlink_wire_bytes_total{direction="received",medium="memory"}"#) ?? 0, 1, holder.body)
        let receiver = String(decoding: await b.daemon.metricsText(), as: UTF8.self)
        XCTAssertTrue(receiver.contains("peerlink_items_received_total{peer=\"\(a.peer)\"} 1"), receiver)
        await a.stop(); await b.stop()
    }

    /// Bytes on the wire follow the session's totals per medium and never go down, even when
    /// a snapshot reads less (a scrape racing a link's end).
    func testWireBytesFollowTheSessionAndNeverGoBackwards() {
        let metrics = DaemonMetrics()
        func value(_ direction: String, _ medium: String) -> Double? {
            ScrapeAnswer(Array("HTTP/1.1 200 OK\r\n\r\n".utf8) + metrics.exposition())?
                .value("peerlink_wire_bytes_total{direction=\"\(direction)\",medium=\"\(medium)\"}")
        }
        metrics.update(MetricsSnapshot(wireBytes: ["tcp": WireBytes(sent: 1000, received: 200), "rfcomm": WireBytes(sent: 50, received: 70)]))
        XCTAssertEqual(value("sent", "tcp"), 1000)
        XCTAssertEqual(value("received", "tcp"), 200)
        XCTAssertEqual(value("received", "rfcomm"), 70)
        metrics.update(MetricsSnapshot(wireBytes: ["tcp": WireBytes(sent: 900, received: 300)]))
        XCTAssertEqual(value("sent", "tcp"), 1000, "a smaller reading does not move the counter down")
        XCTAssertEqual(value("received", "tcp"), 300)
        XCTAssertEqual(value("sent", "rfcomm"), 50, "a medium missing from a snapshot keeps its count")
        metrics.update(MetricsSnapshot(wireBytes: ["tcp": WireBytes(sent: 1500, received: 300)]))
        XCTAssertEqual(value("sent", "tcp"), 1500, "growth past the earlier high is counted once")
    }

    /// docs/METRICS.md lists every metric of the catalogue, with its type.
    func testTheDocsListEveryMetric() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/METRICS.md"), encoding: .utf8)
        for e in MetricsCatalogue.all {
            XCTAssertTrue(doc.contains("| `\(e.name)` | \(e.kind.rawValue) |"), "docs/METRICS.md does not list \(e.name) as a \(e.kind.rawValue)")
        }
    }
}
