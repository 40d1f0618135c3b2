import Foundation
import PeerLink
import TestKit
import XCTest
@testable import PeerLinkHarness

/// The IP lab's pure parts (no root): the topology plan and its commands, fault transitions,
/// the agent line protocol, and the transport that makes a TCP path count as Bluetooth.
final class IPLabPlanTests: XCTestCase {
    let twoLinks = """
    name = "two"
    duration = 5000
    [[link]]
    name = "bt"
    medium = "bluetooth"
    bandwidth = 250_000
    [[link]]
    name = "wifi"
    medium = "wifi"
    up_at = 2000
    [[traffic]]
    kind = "messages"
    count = 10
    size = 100
    """

    func testTopologyNamesAddressesAndSetup() throws {
        let topo = IPLabTopology(scenario: try Scenario.parse(twoLinks), tag: 4_194_304)
        XCTAssertEqual(topo.nsA, "plh-4194304-a")
        XCTAssertEqual(topo.nsB, "plh-4194304-b")
        XCTAssertEqual(topo.links.map(\.name), ["bt", "wifi"])
        for l in topo.links {
            XCTAssertLessThanOrEqual(l.vethA.utf8.count, 15, l.vethA)
            XCTAssertLessThanOrEqual(l.vethB.utf8.count, 15, l.vethB)
            XCTAssertTrue(l.addressA.hasPrefix(l.subnetPrefix) && l.addressB.hasPrefix(l.subnetPrefix))
        }
        XCTAssertNotEqual(topo.links[0].subnetPrefix, topo.links[1].subnetPrefix)
        let setup = topo.setupCommands
        XCTAssertEqual(setup.first, ["ip", "netns", "add", "plh-4194304-a"])
        // Bandwidth only where the scenario limits it, on both ends, in bits per second.
        let tbf = setup.filter { $0.contains("tbf") }
        XCTAssertEqual(tbf.count, 2)
        XCTAssertTrue(tbf.allSatisfy { $0.contains("2000000bit") && $0.contains(topo.links[0].vethA) != $0.contains(topo.links[0].vethB) })
        // Every veth end gets an ingress chain for cuts and loss.
        XCTAssertEqual(setup.filter { $0.contains("chain") }.count, 4)
        XCTAssertEqual(topo.teardownCommands, [["ip", "netns", "del", "plh-4194304-a"], ["ip", "netns", "del", "plh-4194304-b"]])
        XCTAssertEqual(topo.linkName(forRemote: "10.77.2.2:47000"), "wifi")
        XCTAssertEqual(topo.linkName(forRemote: "rfcomm://10.77.1.2:47000"), "bt")
        XCTAssertNil(topo.linkName(forRemote: "192.168.1.1:1"))
    }

    func testFaultCommands() throws {
        let topo = IPLabTopology(scenario: try Scenario.parse(twoLinks), tag: 7)
        let bt = try XCTUnwrap(topo.link("bt"))
        let clear = IPLabTopology.Faults()
        let off = clear.applying(.off, loss: nil)
        XCTAssertEqual(topo.commands(for: bt, from: clear, to: off),
                       [["ip", "-n", "plh-7-a", "link", "set", "plh7a0", "down"], ["ip", "-n", "plh-7-b", "link", "set", "plh7b0", "down"]])
        XCTAssertEqual(topo.commands(for: bt, from: off, to: off.applying(.restore, loss: nil)).map { $0.last }, ["up", "up"])

        let cut = clear.applying(.cut, loss: nil)
        let cutting = topo.commands(for: bt, from: clear, to: cut)
        XCTAssertEqual(cutting.count, 4)  // flush + drop, in each namespace
        XCTAssertEqual(cutting.filter { $0.last == "drop" }.map { $0[3] }, ["plh-7-a", "plh-7-b"])
        XCTAssertFalse(cutting.contains { $0.contains("output") }, "an output drop is not silent (EPERM)")
        // Restoring a cut keeps an earlier loss burst.
        let lossy = clear.applying(.loss, loss: 0.05)
        XCTAssertEqual(lossy.lossPercent, 5)
        let restored = topo.commands(for: bt, from: lossy.applying(.cut, loss: nil), to: lossy.applying(.cut, loss: nil).applying(.restore, loss: nil))
        XCTAssertEqual(restored.filter { $0.contains("numgen") }.count, 2)
        XCTAssertTrue(restored.contains { $0.suffix(3) == ["<", "5", "drop"] })
        XCTAssertEqual(topo.commands(for: bt, from: lossy, to: lossy), [])
        XCTAssertEqual(topo.commands(for: bt, from: lossy, to: lossy.applying(.loss, loss: 0)).filter { $0.contains("rule") }, [])
    }

    func testAgentLinesRoundTrip() throws {
        let s = try Scenario.parse(twoLinks)
        let peer = Identity().peerID
        let commands: [AgentProtocol.Command] = [
            .setup(scenario: s, links: [.init(name: "bt", kind: .bluetooth, local: "10.77.1.1", subnetPrefix: "10.77.1.")], port: 47000),
            .go(t0: 123_456_789_000, peer: peer, endpoints: [TransportEndpoint(medium: .rfcomm, host: "10.77.1.2", port: 47000)],
                later: [.init(at: 2000, link: "wifi", endpoint: TransportEndpoint(medium: .tcp, host: "10.77.2.2", port: 47000))]),
            .finish,
        ]
        for c in commands {
            let line = try AgentProtocol.encode(c)
            XCTAssertFalse(line.contains("\n"))
            XCTAssertEqual(try AgentProtocol.decode(AgentProtocol.Command.self, from: line), c)
        }
        var result = AgentProtocol.Result()
        result.received = [RunRecord.MessageStream(sent: 0, failedSends: 0, arrivals: [0, 1], arrivalTimes: [5, 9])]
        result.carrierSpans = [RunRecord.Span(link: "bt", role: "reliable", from: 0, to: 100)]
        let reports: [AgentProtocol.Report] = [.ready(peer: peer), .mark(.init(at: 3, kind: "carrier", text: "reliable → link 1")),
                                               .result(result), .failed("no")]
        for r in reports {
            XCTAssertEqual(try AgentProtocol.decode(AgentProtocol.Report.self, from: try AgentProtocol.encode(r)), r)
        }
        XCTAssertThrowsError(try AgentProtocol.decode(AgentProtocol.Report.self, from: "{\"ready\":{}}")) { e in
            XCTAssertTrue("\(e)".contains("bad agent line"), "\(e)")
        }
    }

    func testLineSplitterAcrossChunks() {
        var s = LineSplitter()
        XCTAssertEqual(s.feed(Array("{\"a\":".utf8)), [])
        XCTAssertEqual(s.feed(Array("1}\n{\"b\"".utf8)), ["{\"a\":1}"])
        XCTAssertEqual(s.feed(Array(":2}\n\n".utf8)), ["{\"b\":2}", ""])
    }

    /// Over loopback: both ends of an emulated Bluetooth connection say RFCOMM, offer no IP
    /// address for datagrams, and carry messages.
    func testEmulatedBluetoothTransport() async throws {
        let t = EmulatedBluetoothTransport(bindHost: "127.0.0.1")
        XCTAssertEqual(t.medium, .rfcomm)
        let accepted = AsyncStream<MessageConnection>.makeStream()
        let listener = try t.listen(port: 0) { accepted.continuation.yield($0) }
        defer { listener.close() }
        let client = try await t.connect(to: TransportEndpoint(medium: .rfcomm, host: "127.0.0.1", port: listener.port), timeout: .seconds(5))
        defer { client.close() }
        let next = try await within(10, "the listener accepting") { () -> MessageConnection? in
            var it = accepted.stream.makeAsyncIterator()
            return await it.next()
        }
        let server = try XCTUnwrap(next)
        defer { server.close() }
        XCTAssertEqual(client.medium, .rfcomm)
        XCTAssertEqual(server.medium, .rfcomm)
        XCTAssertNil(client.remoteHost)
        XCTAssertTrue(client.remoteDescription.hasPrefix("rfcomm://127.0.0.1"), client.remoteDescription)
        client.enqueue([1, 2, 3])
        await client.flush()
        let got = try await within(10, "the message over the emulated transport") { try await server.receive() }
        XCTAssertEqual(got, [1, 2, 3])
    }
}
