import Crypto
import Foundation
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkDBus
@testable import PeerLinkBluetooth
import PeerLinkCore
import PeerLinkWire

/// Two nodes that know nothing of each other find each other over Bluetooth alone, in the lab
/// VM: A advertises through bluetoothd (LE advert, PROTOCOL §14.2), B browses through
/// bluetoothd and resolves the device (§14.3), invites with a context, then messages both ways
/// and a file checked by SHA-256. With RFCOMM, A's adapter is then powered off: B must report
/// A not connected within the keepalive bound and lost; powered on, A is found and invited
/// again. Each test uses its own pair of virtual controllers (the emulator refuses a third
/// BR/EDR connection between the same pair). Skipped unless `PEERLINK_LAB=1`.
final class BluetoothDiscoveryLabTests: XCTestCase {
    var env: [String: String] { ProcessInfo.processInfo.environment }

    override func setUpWithError() throws {
        guard env["PEERLINK_LAB"] == "1" else { throw XCTSkip("Bluetooth lab only: run scripts/test-bt.sh") }
    }

    /// The bdaddr of virtual controller `index`, or a skip when the lab booted fewer.
    func controller(_ index: Int) throws -> String {
        guard let a = env["PEERLINK_LAB_HCI\(index)"] else {
            throw XCTSkip("needs controller hci\(index) (scripts/test-bt.sh boots eight)")
        }
        return a
    }

    /// In the lab every Bluetooth check of `peerlink doctor` passes, including discovery.
    func test0DoctorReportsBluetoothUsable() throws {
        let report = DoctorBluetooth.report()
        for c in report.checks { labLog("doctor: \(c.ok ? "ok  " : "FAIL") \(c.name): \(c.detail)") }
        XCTAssertTrue(report.usable, "\(report.checks.filter { !$0.ok })")
        // Against bluetoothd as shipped, every adapter gets a reachability line; hci9 (the CLI
        // test's receiver, used by nothing before it) is not connectable until it advertises.
        let reach = report.checks.filter { $0.name.hasSuffix(" reachable") }
        XCTAssertEqual(reach.count, Int(env["PEERLINK_LAB_CONTROLLERS"] ?? "") ?? reach.count, "\(report.checks.map(\.name))")
        if let hci9 = report.checks.first(where: { $0.name == "hci9 reachable" }) {
            XCTAssertTrue(hci9.detail.hasPrefix("not connectable now"), hci9.detail)
        }
        let discovery = try XCTUnwrap(report.checks.first { $0.name == "PeerLink Bluetooth discovery" })
        XCTAssertTrue(discovery.detail.contains("LE advertising"), discovery.detail)
        // The lab's bluetoothd runs as Debian starts it, with Debian's /etc/bluetooth/main.conf.
        let lost = try XCTUnwrap(report.checks.first { $0.name == "lost-peer delay" })
        let conf = BlueZMainConf(text: try String(contentsOfFile: BlueZMainConf.defaultPath, encoding: .utf8))
        XCTAssertTrue(lost.detail.contains("lost \(conf.effectiveTemporaryTimeout) s after") && lost.detail.contains(BlueZMainConf.defaultPath),
                      lost.detail)
    }

    func test6DiscoverOverBluetoothOnlyRFCOMMWithRemotePowerCycle() async throws {
        try await discoveryScenario("RFCOMM", medium: .rfcomm, advertiserIndex: 5, browserIndex: 4, powerCycle: true) {
            RFCOMMTransport(adapterAddress: $0)
        }
    }

    func test7DiscoverOverBluetoothOnlyL2CAP() async throws {
        try await discoveryScenario("L2CAP", medium: .l2cap, advertiserIndex: 7, browserIndex: 6, powerCycle: false) {
            L2CAPTransport(adapterAddress: $0)
        }
    }

    /// bluetoothd restarts while A advertises and B browses (both through the same daemon, as
    /// everything in the VM): B reports A lost and then found again, and can invite it. Runs
    /// after test7 on the same pair (two more BR/EDR connections: resolve + invite). Over
    /// L2CAP. On the lab's old 6.1 kernel this test ran over RFCOMM instead:
    /// closing an L2CAP socket whose ACL the restart had torn down hit a kernel BUG
    /// (list_del corruption in hci_chan_del, Hardware/bt-lab/README.md, Quirks); the lab now
    /// boots 6.12.
    func test8BluetoothdRestartWhileAdvertisingAndBrowsing() async throws {
        let rx = try controller(7), tx = try controller(6)
        let service = try ServiceType("bt-restart")
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [L2CAPTransport(adapterAddress: rx)], handshakeTimeout: .seconds(20))
        let sa = Session(node: a)
        let adv = Advertiser(node: a, service: service, discoveries: [BlueZDiscovery(node: a, adapter: "hci7")])
        let accepter = Task { for await inv in adv.invitations { inv.accept(into: sa) } }
        let noticesA = Task { for await n in adv.notices { labLog("A notice: \(n)") } }
        defer { accepter.cancel(); noticesA.cancel() }
        try await adv.start()
        let b = try Node(identity: Identity(), displayName: "beta", transports: [L2CAPTransport(adapterAddress: tx)], handshakeTimeout: .seconds(20))
        let sb = Session(node: b)
        let browser = Browser(node: b, service: service, discoveries: [BlueZDiscovery(node: b, adapter: "hci6")])
        let events = BrowserLog()
        let watcher = Task {
            for await e in browser.events {
                if case let .notice(n) = e { labLog("B notice: \(n)") }
                events.add(e)
            }
        }
        defer { watcher.cancel(); browser.stop() }
        try await browser.start()
        let first = try await events.waitFor(60) { e -> PeerInfo? in
            if case let .found(p) = e, p.peerID == a.peerID { return p }
            return nil
        }
        XCTAssertNotNil(first, "B found A before the restart")

        let t0 = Date()
        try restartLabBluetoothd()
        labLog(String(format: "bluetoothd restarted and adapters back after %.2f s", Date().timeIntervalSince(t0)))
        let lost = try await events.waitFor(30, after: t0) { e -> Bool? in
            if case let .lost(p) = e, p == a.peerID { return true }
            return nil
        }
        XCTAssertEqual(lost, true, "B reported A lost when bluetoothd went away")
        let again = try await events.waitFor(90, after: t0) { e -> PeerInfo? in
            if case let .found(p) = e, p.peerID == a.peerID { return p }
            return nil
        }
        let peer = try XCTUnwrap(again, "B found A again after bluetoothd came back")
        labLog(String(format: "A found again %.2f s after the restart began", Date().timeIntervalSince(t0)))
        try await b.invite(peer, to: sb, timeout: .seconds(30))
        let got = Task { try await collect(sa, count: 1) }
        try await sb.send(Array("after restart".utf8), to: [a.peerID])
        let received = try await got.value
        XCTAssertEqual(received, ["after restart"])
        await sb.disconnect(); await sa.disconnect()
        await adv.stop()
        await a.stop(); await b.stop()
    }

    /// A USB dongle unplugged and plugged in again, emulated by a second btvirt with one
    /// controller that is stopped and started: browsing and advertising on it pause with a
    /// notice when it disappears (no crash, no error thrown at the application) and resume
    /// when it is back.
    func test10AdapterRemovedAndAddedAgain() async throws {
        let before = Set(try BlueZProbe.adapters().map(\.name))
        var dongle = try startDongle()
        defer { kill(dongle.processIdentifier, SIGKILL) }
        let name = try XCTUnwrap(waitForAdapter(notIn: before, seconds: 30), "the extra controller appeared on D-Bus")
        try labBtmgmt(index: Int(name.dropFirst(3)) ?? 0, ["power", "on"])
        labLog("dongle is \(name)")

        let node = try Node(identity: Identity(), displayName: "dongle", transports: [RFCOMMTransport()])
        let notices = BrowserLog()
        let browse = try BlueZDiscovery(node: node, adapter: name).browse(try ServiceType("bt-dongle")) { notices.add($0) }
        defer { browse.stop() }
        let advert = try BluetoothAdvert(peerID: node.peerID, rfcommChannel: 9, l2capPSM: nil)
        let advertiser = BlueZAdvertiser(service: try ServiceType("bt-dongle"), advert: advert, adapter: name) {
            notices.add(.notice("advertiser: \($0)"))
        }
        try advertiser.start()
        defer { advertiser.stop() }

        let unplugged = Date()
        try await unplug(dongle, name: name)
        let paused = try await notices.waitFor(30, after: unplugged) { e -> String? in
            if case let .notice(n) = e, n.contains("paused") { return n }
            return nil
        }
        labLog("after unplug: \(paused ?? "no notice")")
        XCTAssertNotNil(paused, "browsing reported the adapter gone")

        let plugged = Date()
        dongle = try startDongle()
        let again = try XCTUnwrap(waitForAdapter(notIn: before, seconds: 30), "the controller came back")
        try labBtmgmt(index: Int(again.dropFirst(3)) ?? 0, ["power", "on"])
        // 60 s: once in CI-order runs (session 9) no "browsing again" came within 30 s; the
        // notices since the unplug are logged when it does not come at all.
        let resumed = try await notices.waitFor(60, after: plugged) { e -> String? in
            if case let .notice(n) = e, n.contains("browsing again") { return n }
            return nil
        }
        labLog("after plug-in: \(resumed ?? "no notice") (adapter \(again))")
        if resumed == nil {
            for n in notices.notices(after: unplugged) { labLog("notice since the unplug: \(n)") }
            labLog("adapters now: \(((try? BlueZProbe.adapters()) ?? []).map { "\($0.name) \($0.powered ? "on" : "off")" })")
        }
        XCTAssertNotNil(resumed, "browsing resumed on the returned adapter")
    }

    /// An adapter powered off and on again between two polls of the browser: bluetoothd drops
    /// the browser's discovery without the browser seeing the adapter go. The browser must see
    /// that discovery stopped and start it again. (Session 9: test10 once stayed silent after
    /// its dongle came back, the unplug having fallen between two polls; the trace showed no
    /// StartDiscovery on the new controller.)
    func test11AdapterResetBetweenPollsResumesDiscovery() async throws {
        let name = "hci8"
        let notices = BrowserLog()
        let browser = BlueZBrowser(service: try ServiceType("bt-reset"), adapter: name, pollInterval: .seconds(4)) { e in
            if case let .notice(n) = e { notices.add(.notice(n)) }
        }
        try browser.start()
        defer { browser.stop() }
        let started = await waitUntil(timeout: 10) { self.adapterDiscovering(name) == true }
        XCTAssertTrue(started, "browsing started discovery on \(name)")
        // Just after a poll, so that the next one comes after the adapter is back.
        try await Task.sleep(nanoseconds: 500_000_000)
        let cycled = Date()
        try labBtmgmt(index: 8, ["power", "off"])
        try labBtmgmt(index: 8, ["power", "on"])
        labLog(String(format: "%@ powered off and on in %.2f s", name, Date().timeIntervalSince(cycled)))
        let resumed = try await notices.waitFor(20, after: cycled) { e -> String? in
            if case let .notice(n) = e, n.contains("browsing again") { return n }
            return nil
        }
        labLog("after the reset: \(resumed ?? "no notice")")
        XCTAssertNotNil(resumed, "the browser said it browses again")
        let discovering = await waitUntil(timeout: 10) { self.adapterDiscovering(name) == true }
        XCTAssertTrue(discovering, "\(name) discovers again after its reset")
    }

    /// The advertiser's side of test11: a power cycle between two of its polls removes the
    /// kernel's advertising instance, and bluetoothd (5.66) neither restores it nor calls
    /// Release. The advertiser hears the Powered change as a signal and registers afresh.
    /// (Session 9, 4 s poll: without the signal the instance list stayed empty 10 s later.)
    func test12AdvertiserRegistersAgainAfterAPowerCycleBetweenPolls() async throws {
        let node = try Node(identity: Identity(), displayName: "cycled", transports: [RFCOMMTransport()])
        let advert = try BluetoothAdvert(peerID: node.peerID, rfcommChannel: 9, l2capPSM: nil)
        let notices = BrowserLog()
        let advertiser = BlueZAdvertiser(service: try ServiceType("bt-cycled"), advert: advert, adapter: "hci9", pollInterval: 4) {
            notices.add(.notice($0))
        }
        try advertiser.start()
        defer { advertiser.stop() }
        let before = kernelAdvertisingInstances(index: 9)
        XCTAssertEqual(before, 1, "hci9 advertises")
        try await Task.sleep(nanoseconds: 500_000_000)
        let cycled = Date()
        try labBtmgmt(index: 9, ["power", "off"])
        try labBtmgmt(index: 9, ["power", "on"])
        labLog(String(format: "hci9 powered off and on in %.2f s", Date().timeIntervalSince(cycled)))
        let again = try await notices.waitFor(20, after: cycled) { e -> String? in
            if case let .notice(n) = e, n.contains("registered again") { return n }
            return nil
        }
        labLog("after the power cycle: \(again ?? "no notice")")
        XCTAssertNotNil(again, "the advertiser registered again")
        let back = await waitUntil(timeout: 10) { self.kernelAdvertisingInstances(index: 9) == 1 }
        XCTAssertTrue(back, "hci9's controller advertises again (btmgmt advinfo)")
    }

    /// The advertising instances the kernel holds for controller `index` (`btmgmt advinfo`).
    func kernelAdvertisingInstances(index: Int) -> Int? {
        // btmgmt prints nothing when its stdin is at EOF: keep it open.
        let out = "/tmp/advinfo-\(index).txt"
        // (timeout ends it, so its exit status says nothing: read what it printed.)
        _ = system("sleep 4 | timeout 3 btmgmt --index \(index) advinfo > \(out) 2>&1")
        guard let text = try? String(contentsOfFile: out, encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.contains("Instances list with") }) else { return nil }
        return line.split(separator: " ").compactMap { Int($0) }.first
    }

    /// The adapter's Discovering property, nil when bluetoothd or the adapter is not there.
    func adapterDiscovering(_ adapter: String) -> Bool? {
        guard let bus = try? DBusConnection(address: nil), let objects = try? BlueZObjects.managedObjects(bus) else { return nil }
        return objects["/org/bluez/\(adapter)"]?["org.bluez.Adapter1"]?["Discovering"]?.bool
    }

    /// A second btvirt with one controller (not linked to the lab's others).
    func startDongle() throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/btvirt")
        p.arguments = ["-l1"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        return p
    }

    /// Stops the dongle's btvirt (SIGTERM, then SIGKILL) and waits until its adapter left D-Bus.
    func unplug(_ dongle: Process, name: String) async throws {
        kill(dongle.processIdentifier, SIGTERM)
        for step in 0..<100 {
            let names = (try? BlueZProbe.adapters().map(\.name)) ?? []
            if !names.contains(name) { return }
            if step == 50 { kill(dongle.processIdentifier, SIGKILL) }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        XCTFail("\(name) still on D-Bus 20 s after its btvirt was stopped")
    }

    func waitForAdapter(notIn known: Set<String>, seconds: Double) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let names = try? BlueZProbe.adapters().map(\.name), let new = names.first(where: { !known.contains($0) }) { return new }
            Thread.sleep(forTimeInterval: 0.3)
        }
        return nil
    }

    /// The service UUIDs bluetoothd lists for a remote device (`Device1.UUIDs`, filled from its
    /// SDP records and adverts), or [] when it has no such device.
    func deviceUUIDs(adapter: String, address: String) -> [String] {
        guard let bus = try? DBusConnection(address: nil),
              let objects = try? BlueZObjects.managedObjects(bus) else { return [] }
        let path = "/org/bluez/\(adapter)/dev_" + address.uppercased().replacingOccurrences(of: ":", with: "_")
        guard let value = objects[path]?["org.bluez.Device1"]?["UUIDs"], case let .array(items) = value.unwrapped else { return [] }
        return items.compactMap(\.string)
    }


    func discoveryScenario(_ label: String, medium: Medium, advertiserIndex: Int, browserIndex: Int, powerCycle: Bool,
                           make: (String) -> Transport) async throws {
        let rx = try controller(advertiserIndex), tx = try controller(browserIndex)
        let t0 = Date()
        func lap(_ what: String) { labLog(String(format: "%@ discovery: %@ after %.2f s", label, what, Date().timeIntervalSince(t0))) }
        var config = SessionConfig()
        config.keepaliveInterval = .milliseconds(1000)
        config.deadAfter = .milliseconds(5000)  // the keepalive bound under test (generous for the emulator)
        let service = try ServiceType("bt-\(label.lowercased())")

        // A: listens on its adapter only, advertises over Bluetooth only.
        let a = try Node(identity: Identity(), displayName: "alpha", transports: [make(rx)], handshakeTimeout: .seconds(20))
        let sa = Session(node: a, config: config)
        let adv = Advertiser(node: a, service: service, info: try DiscoveryInfo(["room": "lab"]),
                             discoveries: [BlueZDiscovery(node: a, adapter: "hci\(advertiserIndex)")])
        let contexts = Contexts()
        let accepter = Task { for await inv in adv.invitations { contexts.add(inv.context); inv.accept(into: sa) } }
        let noticesA = Task { for await n in adv.notices { labLog("A notice: \(n)") } }
        defer { accepter.cancel(); noticesA.cancel() }
        try await adv.start()
        lap("A advertising")

        // B: browses over Bluetooth only.
        let b = try Node(identity: Identity(), displayName: "beta", transports: [make(tx)], handshakeTimeout: .seconds(20))
        let sb = Session(node: b, config: config)
        let browser = Browser(node: b, service: service, discoveries: [BlueZDiscovery(node: b, adapter: "hci\(browserIndex)")])
        let events = BrowserLog()
        let watcher = Task {
            for await e in browser.events {
                if case let .notice(n) = e { labLog("B notice: \(n)") }
                events.add(e)
            }
        }
        defer { watcher.cancel(); browser.stop() }
        try await browser.start()

        let found = try await events.waitFor(60) { e -> PeerInfo? in
            if case let .found(p) = e, p.peerID == a.peerID { return p }
            return nil
        }
        let peer = try XCTUnwrap(found, "B found A over Bluetooth within 60 s")
        lap("B found A")
        XCTAssertEqual(peer.displayName, "alpha")
        XCTAssertEqual(peer.info, ["room": "lab"], "discovery info learnt from the hello")
        XCTAssertEqual(peer.endpoints.map(\.medium), [medium])
        XCTAssertEqual(peer.endpoints.first?.host.uppercased(), rx.uppercased())

        try await b.invite(peer, to: sb, context: Array("over \(label)".utf8), timeout: .seconds(30))
        lap("invitation accepted")
        XCTAssertEqual(contexts.all, ["over \(label)"], "A's application saw one invitation, with its context")
        let links = await sb.links()
        XCTAssertEqual(links.first?.links.first?.medium, medium)

        // Reliable messages both ways, in order.
        let atA = Task { try await collect(sa, count: 10) }
        for i in 0..<10 { try await sb.send(Array("b→a \(i)".utf8), to: [a.peerID]) }
        let gotA = try await atA.value
        XCTAssertEqual(gotA, (0..<10).map { "b→a \($0)" })
        let atB = Task { try await collect(sb, count: 10) }
        for i in 0..<10 { try await sa.send(Array("a→b \(i)".utf8), to: [b.peerID]) }
        let gotB = try await atB.value
        XCTAssertEqual(gotB, (0..<10).map { "a→b \($0)" })
        lap("20 messages")

        // A file, B → A, checked by SHA-256.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-btd-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var rng360 = seededGenerator(self)  // the seed is printed; PEERLINK_TEST_SEED repeats it
        let content = Data((0..<(128 * 1024)).map { _ in UInt8.random(in: 0...255, using: &rng360) })
        try content.write(to: URL(fileURLWithPath: dir + "/blob.bin"))
        let receiving = Task { () -> Bool in
            for await e in sa.events {
                if case let .resourceOffered(o) = e { try await sa.accept(o, into: dir + "/in") }
                if case let .resourceFinished(_, _, error) = e { return error == nil }
            }
            return false
        }
        try await sb.sendResource(at: dir + "/blob.bin", to: a.peerID)
        let received = try await receiving.value
        XCTAssertTrue(received)
        let got = try Data(contentsOf: URL(fileURLWithPath: dir + "/in/blob.bin"))
        XCTAssertEqual(Array(SHA256.hash(data: got)), Array(SHA256.hash(data: content)))
        lap("128 KiB file")

        // A's SDP record (ProfileManager1): B's bluetoothd browsed A's SDP records when the
        // two first connected, and lists the service UUID among A's UUIDs.
        let uuid = BluetoothServiceUUID.string(for: service)
        var remote: [String] = []
        for _ in 0..<40 where !remote.contains(uuid) {
            remote = deviceUUIDs(adapter: "hci\(browserIndex)", address: rx)
            if !remote.contains(uuid) { try await Task.sleep(nanoseconds: 500_000_000) }
        }
        XCTAssertTrue(remote.contains(uuid), "B's bluetoothd found A's SDP record for \(uuid); A's UUIDs: \(remote)")
        lap("A's SDP record seen by B")

        if powerCycle {
            let offAt = Date()
            let notConnected = Task { () -> Double? in
                for await e in sb.events {
                    if case let .peerStateChanged(p, _, .notConnected) = e, p == a.peerID { return Date().timeIntervalSince(offAt) }
                }
                return nil
            }
            defer { try? labBtmgmt(index: advertiserIndex, ["power", "on"]) }
            try labBtmgmt(index: advertiserIndex, ["power", "off"])
            let after = try await withTimeout(config.deadAfter.inSeconds + 10) { await notConnected.value } ?? nil
            let seconds = try XCTUnwrap(after, "B never reported A not connected")
            labLog(String(format: "%@ discovery: A's adapter off → not connected after %.2f s (bound %.1f s)",
                          label, seconds, config.deadAfter.inSeconds))
            XCTAssertLessThanOrEqual(seconds, config.deadAfter.inSeconds + 3, "within the keepalive bound (+3 s for the emulator)")
            // bluetoothd forgets A's device TemporaryTimeout s after its last advert (PROTOCOL §14.3).
            let forget = BlueZMainConf(text: (try? String(contentsOfFile: "/run/bt-lab/main.conf", encoding: .utf8)) ?? "")
                .effectiveTemporaryTimeout
            let lost = try await events.waitFor(Double(forget) + 20) { e -> Bool? in
                if case let .lost(p) = e, p == a.peerID { return true }
                return nil
            }
            XCTAssertEqual(lost, true, "B's browser lost A within bluetoothd's TemporaryTimeout (\(forget) s) + 20 s")
            lap(String(format: "A lost %.2f s after its adapter went off", Date().timeIntervalSince(offAt)))

            let onAt = Date()
            try labBtmgmt(index: advertiserIndex, ["power", "on"])
            let again = try await events.waitFor(90, after: onAt) { e -> PeerInfo? in
                if case let .found(p) = e, p.peerID == a.peerID { return p }
                return nil
            }
            let back = try XCTUnwrap(again, "B found A again after its adapter was powered on")
            lap(String(format: "A found again %.2f s after power on", Date().timeIntervalSince(onAt)))
            var invited = false
            for attempt in 1...3 where !invited {
                do {
                    try await b.invite(back, to: sb, timeout: .seconds(30))
                    invited = true
                } catch {
                    labLog("re-invite attempt \(attempt) failed: \(error)")
                    try await Task.sleep(nanoseconds: 2_000_000_000)
                }
            }
            XCTAssertTrue(invited, "A invited again after power on")
            if invited {
                let after = Task { try await collect(sa, count: 1) }
                try await sb.send(Array("after power on".utf8), to: [a.peerID])
                let gotAfter = try await after.value
                XCTAssertEqual(gotAfter, ["after power on"])
            }
        }
        await sb.disconnect(); await sa.disconnect()
        await adv.stop()
        await a.stop(); await b.stop()
    }
}

/// Invitation contexts seen by the advertiser's application.
final class Contexts: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ c: [UInt8]) { lock.withLock { list.append(String(decoding: c, as: UTF8.self)) } }
    var all: [String] { lock.withLock { list } }
}

/// Every browser event with its arrival time, and waiting for one that matches.
final class BrowserLog: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [(Date, DiscoveryEvent)] = []
    func add(_ e: DiscoveryEvent) { lock.withLock { list.append((Date(), e)) } }

    /// The notices reported at or after `after`, oldest first, with their time.
    func notices(after: Date) -> [String] {
        lock.withLock { list }.compactMap { at, e in
            guard at >= after, case let .notice(n) = e else { return nil }
            return String(format: "+%.1f s %@", at.timeIntervalSince(after), n)
        }
    }

    /// The first event (at or after `after`) for which `match` returns a value, polling up
    /// to `seconds`.
    func waitFor<T>(_ seconds: Double, after: Date = .distantPast, _ match: (DiscoveryEvent) -> T?) async throws -> T? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let snapshot = lock.withLock { list }
            for (at, e) in snapshot where at >= after {
                if let v = match(e) { return v }
            }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        return nil
    }
}

/// The `peerlink` CLI over Bluetooth alone in the lab: `receive --media bluetooth` on hci9,
/// `send --media bluetooth` from hci8 finds it by name, sends a file, and the receiver keeps it
/// only after its SHA-256 matched; `browse --media bluetooth` lists the receiver.
final class BluetoothCLILabTests: XCTestCase {
    var env: [String: String] { ProcessInfo.processInfo.environment }

    /// `peerlink` next to the test bundle (swift build --build-tests builds both).
    var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("peerlink").path
    }

    func discoverableTimeout(_ adapter: String) throws -> DBusValue? {
        try DBusConnection().call("org.bluez", "/org/bluez/\(adapter)", "org.freedesktop.DBus.Properties", "Get",
                                  [.string("org.bluez.Adapter1"), .string("DiscoverableTimeout")]).first?.unwrapped
    }

    func test9SendAndReceiveOverBluetoothOnly() throws {
        guard env["PEERLINK_LAB"] == "1" else { throw XCTSkip("Bluetooth lab only: run scripts/test-bt.sh") }
        guard env["PEERLINK_LAB_HCI9"] != nil else { throw XCTSkip("needs controllers hci8 and hci9") }
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: binary), "no peerlink binary at \(binary)")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-btcli-\(UUID())").path
        for sub in ["/rx", "/tx", "/inbox"] { try FileManager.default.createDirectory(atPath: dir + sub, withIntermediateDirectories: true) }
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var rng504 = seededGenerator(self)  // the seed is printed; PEERLINK_TEST_SEED repeats it
        let content = Data((0..<(64 * 1024)).map { _ in UInt8.random(in: 0...255, using: &rng504) })
        try content.write(to: URL(fileURLWithPath: dir + "/report.bin"))

        // bluetoothd as shipped: hci9 is not connectable until PeerLink advertises on it.
        let before = try ManagementSocket.controllerInfo(index: 9)
        let timeoutBefore = try discoverableTimeout("hci9")
        labLog("hci9 before receive: \(before.current.names.joined(separator: " "))")
        XCTAssertFalse(before.current.contains(.connectable), "the lab must not make hci9 connectable itself")

        let receiver = LabProcess(binary, ["receive", "--service", "bt-cli", "--media", "bluetooth", "--adapter", "hci9",
                                           "--dir", dir + "/inbox", "--accept-all", "--json", "--name", "alpha", "--config-dir", dir + "/rx"])
        defer { receiver.stop() }
        let rxStart = Date()
        try receiver.start()
        XCTAssertTrue(receiver.waitForLine(containing: "\"advertising\"", seconds: 30), "receiver advertising: \(receiver.output)\n\(receiver.fate)")
        let advertisedAfter = Date().timeIntervalSince(rxStart)
        XCTAssertTrue(receiver.waitForLine(containing: "made connectable", seconds: 10), "receiver made hci9 connectable: \(receiver.output)")
        XCTAssertTrue(try ManagementSocket.controllerInfo(index: 9).current.contains(.connectable), "hci9 connectable while advertising")
        // Discoverable only for a moment (a power-off while discoverable aborts bluetoothd
        // 5.66), and the user's DiscoverableTimeout is as it was.
        let settled = Date().addingTimeInterval(5)
        while try ManagementSocket.controllerInfo(index: 9).current.contains(.discoverable), Date() < settled { Thread.sleep(forTimeInterval: 0.2) }
        let during = try ManagementSocket.controllerInfo(index: 9).current
        XCTAssertTrue(during.contains(.connectable) && !during.contains(.discoverable), "connectable, not discoverable: \(during.names)")
        XCTAssertEqual(try discoverableTimeout("hci9"), timeoutBefore, "DiscoverableTimeout put back")

        let sender = LabProcess(binary, ["send", dir + "/report.bin", "--service", "bt-cli", "--media", "bluetooth", "--adapter", "hci8",
                                         "--to", "alpha", "--json", "--config-dir", dir + "/tx", "--timeout", "60"])
        let txStart = Date()
        try sender.start()
        XCTAssertTrue(sender.waitForLine(containing: "\"state\":\"connected\"", seconds: 60), "sender connected: \(sender.output)")
        let connectedAfter = Date().timeIntervalSince(txStart)
        let status = sender.wait(seconds: 120)
        let sentAfter = Date().timeIntervalSince(txStart)
        labLog("CLI send exit \(String(describing: status)); output:\n\(sender.output)")
        labLog(String(format: "stock bluetoothd: advertised %.2f s after receive started; send connected after %.2f s, done (64 KiB) after %.2f s",
                      advertisedAfter, connectedAfter, sentAfter))
        // What the defects looked like, checked as behaviour rather than by the clock: a D-Bus
        // reply that never came (libdbus gives up after 25 s), and dials that failed and were
        // retried against an adapter that was not connectable.
        for (who, output) in [("receiver", receiver.output), ("sender", sender.output)] {
            XCTAssertFalse(output.contains("NoReply") || output.contains("no reply to"), "\(who) waited out a D-Bus reply: \(output)")
            XCTAssertFalse(output.contains("timed out"), "\(who) waited out a timeout: \(output)")
        }
        XCTAssertFalse(sender.output.contains("link-attempt-failed"), "the first dial reached the receiver: \(sender.output)")
        XCTAssertEqual(sender.output.components(separatedBy: "\"event\":\"inviting\"").count - 1, 1,
                       "one invitation, answered: \(sender.output)")
        XCTAssertEqual(status, 0)
        XCTAssertTrue(sender.output.contains("\"sent\""), sender.output)
        let got = try Data(contentsOf: URL(fileURLWithPath: dir + "/inbox/report.bin"))
        XCTAssertEqual(Array(SHA256.hash(data: got)), Array(SHA256.hash(data: content)))

        let browse = LabProcess(binary, ["browse", "--service", "bt-cli", "--media", "bluetooth", "--adapter", "hci8",
                                         "--json", "--timeout", "20", "--config-dir", dir + "/tx"])
        try browse.start()
        _ = browse.wait(seconds: 40)
        labLog("CLI browse output:\n\(browse.output)")
        XCTAssertTrue(browse.output.contains("\"found\"") && browse.output.contains("alpha"), browse.output)

        receiver.stop()
        let after = try ManagementSocket.controllerInfo(index: 9)
        labLog("hci9 after receive stopped: \(after.current.names.joined(separator: " "))")
        XCTAssertFalse(after.current.contains(.connectable), "stopping put hci9 back as bluetoothd had it")
    }
}

/// A child process whose stdout and stderr are collected line by line.
final class LabProcess: @unchecked Sendable {
    private let process = Process()
    private let pipe = Pipe()
    private let lock = NSLock()
    private var text = ""

    init(_ path: String, _ arguments: [String]) {
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
    }

    var output: String { lock.withLock { text } }

    func start() throws {
        pipe.fileHandleForReading.readabilityHandler = { [weak self] h in
            let data = h.availableData
            guard !data.isEmpty else { h.readabilityHandler = nil; return }
            self?.lock.withLock { self?.text += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
    }

    func waitForLine(containing needle: String, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if output.contains(needle) { return true }
            if !process.isRunning { return output.contains(needle) }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    /// The exit status, or nil if it still ran after `seconds` (then it is killed).
    func wait(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        if process.isRunning { stop(); return nil }
        Thread.sleep(forTimeInterval: 0.2)  // let the last output arrive
        return process.terminationStatus
    }

    /// What became of the process, for a failure message: how it ended, or, while it still
    /// runs, the stacks of its threads (gdb, bounded to 60 s) so a hang shows where it is.
    var fate: String {
        guard process.isRunning else {
            let how = process.terminationReason == .uncaughtSignal ? "was killed by signal" : "exited with status"
            return "it \(how) \(process.terminationStatus)"
        }
        let gdb = "/usr/bin/gdb"
        guard FileManager.default.isExecutableFile(atPath: gdb) else { return "it still runs (no gdb here for its stacks)" }
        let dump = Process()
        dump.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        dump.arguments = ["-k", "5", "60", gdb, "-p", String(process.processIdentifier), "-batch", "-nx",
                          "-ex", "set pagination off", "-ex", "thread apply all bt 16"]
        let out = Pipe()
        dump.standardOutput = out
        dump.standardError = FileHandle.nullDevice
        guard (try? dump.run()) != nil else { return "it still runs (gdb did not start)" }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        dump.waitUntilExit()
        let frames = String(decoding: data, as: UTF8.self).split(separator: "\n")
            .filter { $0.hasPrefix("Thread ") || $0.hasPrefix("#") }
        return "it still runs; its threads:\n" + frames.prefix(200).joined(separator: "\n")
    }

    func stop() {
        if process.isRunning { process.interrupt() }
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        if process.isRunning { process.terminate() }
    }
}
