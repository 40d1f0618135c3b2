import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkAvahi
import CAvahi

/// Real avahi-daemons in two network namespaces (scripts/lab/iplab.sh). Needs root; skipped
/// when the lab cannot start unless CI=true.
final class AvahiLabTests: XCTestCase {
    private var lab: AvahiIPLab?
    private let type = "_field-demo._tcp"

    override func setUpWithError() throws {
        try super.setUpWithError()
        let lab = try AvahiIPLab.up(ipv6: name.contains("IPv6"))
        self.lab = lab
        print("AvahiLabTests: lab \(lab.hosts) up in \(String(format: "%.2f", lab.upSeconds)) s")
    }

    override func tearDown() {
        lab?.down()
        lab = nil
        super.tearDown()
    }

    private func requireLab() throws -> AvahiIPLab {
        guard let lab else { throw XCTSkip("no lab") }
        return lab
    }

    func testPublishIsFoundWithTXTThenUpdatedThenLost() async throws {
        let lab = try requireLab()
        let (a, b) = (lab.hosts[0], lab.hosts[1])

        let probe = AvahiProbe.check(busAddress: lab.bus(a))
        guard case let .success(version) = probe else { return XCTFail("probe on lab bus failed: \(probe)") }
        XCTAssertTrue(version.hasPrefix("avahi"), version)

        let browser = try AvahiBrowser(type: type, busAddress: lab.bus(b))
        defer { browser.stop() }
        let seen = AvahiEventLog(browser.events)

        let txt = ["pl.id": "abcdefghijklmnopqrstuvwxyz234567", "pl.name": "Alice", "pl.v": "1",
                   "app.color": "blue", "app.flag": ""]
        let start = Date()
        let publisher = try AvahiPublisher(type: type, name: "PeerLink Lab A", port: 4242, txt: txt, busAddress: lab.bus(a))
        defer { publisher.stop() }
        let published = AvahiEventLog(publisher.events)

        let registered = await published.wait(timeout: 10) {
            if case .registered("PeerLink Lab A") = $0 { return true } else { return false }
        }
        XCTAssertNotNil(registered, "publisher never registered: \(published.all)")
        let found = await seen.wait(timeout: 10) {
            if case let .found(service) = $0, service.name == "PeerLink Lab A" { return true } else { return false }
        }
        guard let found, case let .found(service) = found.event else {
            return XCTFail("browser on \(b) never found the service: \(seen.all)")
        }
        if let registered {
            print("AvahiLabTests: registered after \(String(format: "%.2f", registered.date.timeIntervalSince(start))) s, seen on the other host after \(String(format: "%.2f", found.date.timeIntervalSince(start))) s")
        }
        XCTAssertEqual(service.txt, txt)
        XCTAssertTrue(service.endpoints.contains { $0.host == lab.address(a) && $0.port == 4242 && $0.interfaceIndex > 0 },
                      "endpoints \(service.endpoints) lack \(lab.address(a)):4242")
        XCTAssertEqual(Set(service.endpoints).count, service.endpoints.count)

        var newTXT = txt
        newTXT["app.color"] = "green"
        try publisher.updateTXT(newTXT)
        let updated = await seen.wait(from: found.index + 1, timeout: 10) {
            if case let .updated(s) = $0, s.name == "PeerLink Lab A", s.txt["app.color"] == "green" { return true } else { return false }
        }
        XCTAssertNotNil(updated, "no update with the new TXT: \(seen.all)")

        publisher.stop()
        let lost = await seen.wait(from: found.index + 1, timeout: 10) {
            if case .lost("PeerLink Lab A") = $0 { return true } else { return false }
        }
        XCTAssertNotNil(lost, "no lost after stop: \(seen.all)")
        XCTAssertTrue(browser.services.isEmpty)
    }

    /// Avahi's main loop runs on the I/O loop: six publishers and six browsers that find
    /// them start no thread each.
    func testPublishersAndBrowsersDoNotEachStartAThread() async throws {
        let lab = try requireLab()
        let (a, b) = (lab.hosts[0], lab.hosts[1])
        let before = ProcessThreads.count()
        var publishers: [AvahiPublisher] = []
        var browsers: [AvahiBrowser] = []
        defer {
            for p in publishers { p.stop() }
            for b in browsers { b.stop() }
        }
        for i in 0..<6 {
            publishers.append(try AvahiPublisher(type: type, name: "Threads \(i)", port: 4300 + UInt16(i), txt: [:], busAddress: lab.bus(a)))
            browsers.append(try AvahiBrowser(type: type, busAddress: lab.bus(b)))
        }
        for (i, browser) in browsers.enumerated() {
            let seen = AvahiEventLog(browser.events)
            let found = await seen.wait(timeout: 20) {
                if case let .found(s) = $0, s.name.hasPrefix("Threads ") { return true } else { return false }
            }
            XCTAssertNotNil(found, "browser \(i) found nothing: \(seen.all)")
        }
        let during = ProcessThreads.count()
        XCTAssertLessThanOrEqual(during - before, BlockingPool.shared.maxThreads, "threads before: \(before), with 12 Avahi clients: \(during)")
    }

    func testIPv4AndIPv6InstancesMergeIntoOneService() async throws {
        let lab = try requireLab()
        let (a, b) = (lab.hosts[0], lab.hosts[1])
        let browser = try AvahiBrowser(type: type, busAddress: lab.bus(b))
        defer { browser.stop() }
        let seen = AvahiEventLog(browser.events)
        let publisher = try AvahiPublisher(type: type, name: "Dual Stack", port: 4545, txt: ["pl.id": "dual"], busAddress: lab.bus(a))
        defer { publisher.stop() }

        let both = await seen.wait(timeout: 10) {
            switch $0 {
            case let .found(s), let .updated(s):
                return s.name == "Dual Stack" && s.endpoints.contains { $0.host == lab.address(a) }
                    && s.endpoints.contains { $0.host.hasPrefix("fe80:") }
            default:
                return false
            }
        }
        XCTAssertNotNil(both, "no merged IPv4+IPv6 view: \(seen.all)")
        publisher.stop()
        let lost = await seen.wait(timeout: 10) {
            if case .lost("Dual Stack") = $0 { return true } else { return false }
        }
        XCTAssertNotNil(lost, "no lost after stop: \(seen.all)")
        let events = seen.all
        let founds = events.filter { if case let .found(s) = $0 { return s.name == "Dual Stack" } else { return false } }
        let losts = events.filter { if case .lost("Dual Stack") = $0 { return true } else { return false } }
        XCTAssertEqual(founds.count, 1, "\(events)")
        XCTAssertEqual(losts.count, 1, "\(events)")
    }

    func testNameCollisionRenamesOnePublisher() async throws {
        let lab = try requireLab()
        let (a, b) = (lab.hosts[0], lab.hosts[1])
        let first = try AvahiPublisher(type: type, name: "Same Name", port: 5001, txt: ["pl.id": "first"], busAddress: lab.bus(a))
        defer { first.stop() }
        let firstLog = AvahiEventLog(first.events)
        let firstRegistered = await firstLog.wait(timeout: 10) {
            if case .registered = $0 { return true } else { return false }
        }
        XCTAssertNotNil(firstRegistered, "first publisher never registered: \(firstLog.all)")

        let second = try AvahiPublisher(type: type, name: "Same Name", port: 5002, txt: ["pl.id": "second"], busAddress: lab.bus(b))
        defer { second.stop() }
        let secondLog = AvahiEventLog(second.events)
        let isRenamed: (AvahiPublishEvent) -> Bool = { if case .renamed = $0 { return true } else { return false } }
        let renamed = await secondLog.wait(timeout: 10, isRenamed)
        let firstRenamed = await firstLog.wait(timeout: 0.1, isRenamed)
        XCTAssertTrue(renamed != nil || firstRenamed != nil, "nobody was renamed: \(firstLog.all) / \(secondLog.all)")
        if let renamed, case let .renamed(from, to) = renamed.event {
            XCTAssertEqual(from, "Same Name")
            XCTAssertNotEqual(to, "Same Name")
            let registeredAs = await secondLog.wait(from: renamed.index, timeout: 10) {
                if case .registered(to) = $0 { return true } else { return false }
            }
            XCTAssertNotNil(registeredAs, "renamed publisher did not register as \(to): \(secondLog.all)")
            XCTAssertEqual(second.currentName, to)
        }
    }

    func testPublisherReregistersAfterAvahiRestart() async throws {
        let lab = try requireLab()
        let (a, b) = (lab.hosts[0], lab.hosts[1])
        let browser = try AvahiBrowser(type: type, busAddress: lab.bus(b))
        defer { browser.stop() }
        let seen = AvahiEventLog(browser.events)
        let publisher = try AvahiPublisher(type: type, name: "Survivor", port: 4343, txt: ["pl.id": "survivor"], busAddress: lab.bus(a))
        defer { publisher.stop() }
        let published = AvahiEventLog(publisher.events)

        let firstFound = await seen.wait(timeout: 10) {
            if case let .found(s) = $0, s.name == "Survivor" { return true } else { return false }
        }
        XCTAssertNotNil(firstFound, "not found before the restart: \(seen.all)")
        let marks = (published: published.count, seen: seen.count)

        let restartStart = Date()
        let (status, output) = AvahiIPLab.run(["restart-avahi", a], timeout: 30)
        XCTAssertEqual(status, 0, "restart-avahi failed: \(output)")

        let down = await published.wait(from: marks.published, timeout: 10) {
            if case .daemonUnavailable = $0 { return true } else { return false }
        }
        XCTAssertNotNil(down, "publisher did not notice the restart: \(published.all)")
        let again = await published.wait(from: (down?.index ?? marks.published) + 1, timeout: 15) {
            if case .registered("Survivor") = $0 { return true } else { return false }
        }
        XCTAssertNotNil(again, "publisher did not re-register: \(published.all)")
        let foundAgain = await seen.wait(from: marks.seen, timeout: 15) {
            if case let .found(s) = $0, s.name == "Survivor", s.endpoints.contains(where: { $0.host == lab.address(a) }) { return true }
            return false
        }
        XCTAssertNotNil(foundAgain, "browser did not see the service again: \(seen.all)")
        if let again, let foundAgain {
            print("AvahiLabTests: after restart-avahi: re-registered +\(String(format: "%.2f", again.date.timeIntervalSince(restartStart))) s, seen again +\(String(format: "%.2f", foundAgain.date.timeIntervalSince(restartStart))) s")
        }
    }

    func testBrowserWaitsForDaemonAndProbeNamesIt() async throws {
        let lab = try requireLab()
        let (a, b) = (lab.hosts[0], lab.hosts[1])
        let (status, output) = AvahiIPLab.run(["stop-avahi", b], timeout: 20)
        XCTAssertEqual(status, 0, "stop-avahi failed: \(output)")

        let probe = AvahiProbe.check(busAddress: lab.bus(b))
        XCTAssertEqual(probe.failureValue, .daemonNotRunning(address: lab.bus(b)))
        XCTAssertTrue(probe.failureValue?.description.hasPrefix("avahi-daemon is not running") ?? false)

        let browser = try AvahiBrowser(type: type, busAddress: lab.bus(b))
        defer { browser.stop() }
        let seen = AvahiEventLog(browser.events)
        let waiting = await seen.wait(timeout: 5) {
            if case .daemonUnavailable = $0 { return true } else { return false }
        }
        XCTAssertNotNil(waiting, "no daemonUnavailable while the daemon is stopped: \(seen.all)")

        let publisher = try AvahiPublisher(type: type, name: "Late", port: 4444, txt: [:], busAddress: lab.bus(a))
        defer { publisher.stop() }
        let (startStatus, startOutput) = AvahiIPLab.run(["start-avahi", b], timeout: 20)
        XCTAssertEqual(startStatus, 0, "start-avahi failed: \(startOutput)")
        let available = await seen.wait(timeout: 10) {
            if case .daemonAvailable = $0 { return true } else { return false }
        }
        XCTAssertNotNil(available, "no daemonAvailable: \(seen.all)")
        let found = await seen.wait(timeout: 10) {
            if case let .found(s) = $0, s.name == "Late", s.txt.isEmpty { return true } else { return false }
        }
        XCTAssertNotNil(found, "service not found once the daemon started: \(seen.all)")
    }
}

/// Unit-level checks that need no lab.
final class AvahiProbeTests: XCTestCase {
    func testProbeReportsMissingBusClearly() {
        let address = "unix:path=/nonexistent-peerlink-\(UUID().uuidString)/bus.sock"
        let result = AvahiProbe.check(busAddress: address)
        guard case let .failure(error) = result else { return XCTFail("expected a failure, got \(result)") }
        guard case .noSystemBus(address, _) = error else { return XCTFail("expected noSystemBus, got \(error)") }
        XCTAssertTrue(error.description.hasPrefix("no D-Bus system bus at \(address)"), error.description)
    }

    func testPublisherAndBrowserThrowForMissingBus() {
        let address = "unix:path=/nonexistent-peerlink-\(UUID().uuidString)/bus.sock"
        XCTAssertThrowsError(try AvahiBrowser(type: "_field-demo._tcp", busAddress: address)) { error in
            guard case .noSystemBus = error as? AvahiError else { return XCTFail("unexpected \(error)") }
        }
        XCTAssertThrowsError(try AvahiPublisher(type: "_field-demo._tcp", name: "x", port: 1, txt: [:], busAddress: address))
    }

    /// Bad arguments are refused before any bus is touched: each call gets its own
    /// `invalidArgument`, not the missing bus's `noSystemBus` that every call here would get
    /// once past validation.
    func testInvalidArgumentsAreRejected() {
        let noBus = "unix:path=/nonexistent-peerlink-\(UUID().uuidString)/bus.sock"
        func expect(_ message: String, line: UInt = #line, _ call: () throws -> Void) {
            XCTAssertThrowsError(try call(), line: line) { error in
                XCTAssertEqual(error as? AvahiError, .invalidArgument(message), line: line)
            }
        }
        expect(#""field-demo" is not a DNS-SD service type like "_name._tcp" or "_name._udp""#) {
            _ = try AvahiBrowser(type: "field-demo", busAddress: noBus)
        }
        expect(#"avahi-daemon refuses one-character service types such as "_x._tcp"; use a service type of 2-15 characters"#) {
            _ = try AvahiPublisher(type: "_x._tcp", name: "x", port: 1, txt: [:], busAddress: noBus)
        }
        let long = String(repeating: "n", count: 64)
        expect("\"\(long)\" is not a valid DNS-SD instance name (1–63 bytes)") {
            _ = try AvahiPublisher(type: "_field-demo._tcp", name: long, port: 1, txt: [:], busAddress: noBus)
        }
        expect(#"TXT key "bad=key" must be printable ASCII without '='"#) {
            _ = try AvahiPublisher(type: "_field-demo._tcp", name: "x", port: 1, txt: ["bad=key": "v"], busAddress: noBus)
        }
        expect(#"TXT entry "k" is 302 bytes; the limit is 255"#) {
            _ = try AvahiPublisher(type: "_field-demo._tcp", name: "x", port: 1, txt: ["k": String(repeating: "v", count: 300)], busAddress: noBus)
        }
        // The same calls with valid arguments get as far as the bus.
        XCTAssertThrowsError(try AvahiPublisher(type: "_field-demo._tcp", name: "x", port: 1, txt: ["k": "v"], busAddress: noBus)) { error in
            guard case .noSystemBus? = error as? AvahiError else { return XCTFail("unexpected \(error)") }
        }
    }
}

extension Result {
    fileprivate var failureValue: Failure? {
        if case let .failure(error) = self { return error }
        return nil
    }
}

final class AvahiTXTTests: XCTestCase {
    func testParseBuildsDictionary() {
        var list = avahi_string_list_add(nil, "flag")
        list = avahi_string_list_add(list, "k=v=w")
        list = avahi_string_list_add(list, "empty=")
        list = avahi_string_list_add(list, "dup=second")
        list = avahi_string_list_add(list, "dup=first")  // avahi prepends: this one comes first
        defer { avahi_string_list_free(list) }
        XCTAssertEqual(AvahiTXT.parse(list), ["flag": "", "k": "v=w", "empty": "", "dup": "first"])
    }

    func testParseUsesTheTXTRulesAndRejectsBrokenRecords() {
        var list = avahi_string_list_add(nil, "_ID=upper")
        list = avahi_string_list_add(list, "_id=lower")  // prepended: read first
        XCTAssertEqual(AvahiTXT.parse(list), ["_id": "lower"], "keys compare ignoring case; the first wins")
        avahi_string_list_free(list)
        let bad: [UInt8] = [0x6b, 0x3d, 0xff, 0xfe]  // "k=" + invalid UTF-8
        let broken = bad.withUnsafeBufferPointer { avahi_string_list_add_arbitrary(nil, $0.baseAddress, $0.count) }
        defer { avahi_string_list_free(broken) }
        XCTAssertEqual(AvahiTXT.parse(broken), [:], "a record that is not UTF-8 is not read as a PeerLink advertisement")
    }

    func testMakeListRoundTrips() {
        let txt = ["pl.id": "abc", "name": "Zoë", "flag": ""]
        let list = AvahiTXT.makeList(txt)
        defer { avahi_string_list_free(list) }
        XCTAssertEqual(AvahiTXT.parse(list), txt)
        XCTAssertNil(AvahiTXT.makeList([:]))
    }
}
