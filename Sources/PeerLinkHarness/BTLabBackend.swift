import Foundation
import PeerLink
import PeerLinkBluetooth
import PeerLinkWiFiDirect

/// Runs scenarios inside the Bluetooth lab VM (scripts/harness-btlab.sh boots it): a
/// `bluetooth` link is a real RFCOMM link between two virtual controllers, a `wifi` link is
/// TCP between two addresses of a dummy interface in the VM, a `wifi-direct` link is a group
/// the nodes negotiate over their session and form on the lab's hwsim radios through each
/// radio's own wpa_supplicant (`WiFiDirectUpgrader`). Both nodes run in this process,
/// since Bluetooth sockets exist only in the VM's initial network namespace. Events: `off` on
/// Bluetooth powers the receiver's controller off (btmgmt), `restore` powers it on; on Wi-Fi,
/// `off` takes the interface down and drops its traffic (nftables), `cut` only drops it
/// (silent), `loss` drops that share of its packets at random; on Wi-Fi Direct, `off` or
/// `cut` tears every group down on both radios (as a user switching Wi-Fi off would).
///
/// The Wi-Fi link's bandwidth and delay come from a shaping relay (DelayRelay) in front of the
/// receiver. Not emulated here, and said in each report: the Bluetooth link's bandwidth and
/// delay (the radio runs at its own speed), a silent cut of a radio (done as a power-off), and
/// loss on a Bluetooth link (refused).
public struct BTLabBackend: ScenarioBackend {
    public let name = "btlab"
    /// The lab's controller addresses by index (`PEERLINK_LAB_HCI<n>`).
    public let controllers: [Int: String]
    /// The lab's Wi-Fi radios by index (`PEERLINK_LAB_WIFI<n>`) and their wpa_supplicant's
    /// bus (`PEERLINK_LAB_WIFI<n>_BUS`).
    public let radios: [Int: (interface: String, bus: String)]
    /// The first controller index to use; link pairs are (first, first+1), (first+2, first+3)…
    public var firstController = 0
    public var sampleInterval = 25

    /// Reads the controllers from the lab's environment.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        var c: [Int: String] = [:]
        for (k, v) in environment where k.hasPrefix("PEERLINK_LAB_HCI") {
            if let i = Int(k.dropFirst("PEERLINK_LAB_HCI".count)) { c[i] = v }
        }
        controllers = c
        var r: [Int: (interface: String, bus: String)] = [:]
        for (k, v) in environment where k.hasPrefix("PEERLINK_LAB_WIFI") && !k.hasSuffix("_BUS") && !k.hasSuffix("_MAC") {
            if let i = Int(k.dropFirst("PEERLINK_LAB_WIFI".count)), let bus = environment["PEERLINK_LAB_WIFI\(i)_BUS"] { r[i] = (v, bus) }
        }
        radios = r
    }

    /// Why this backend cannot run `scenario`, or nil.
    public func refusal(_ scenario: Scenario) -> String? {
        let bt = scenario.links.filter { $0.kind == .bluetooth }, wifi = scenario.links.filter { $0.kind == .wifi }
        if bt.count > 1 || wifi.count > 1 { return "the btlab backend runs one bluetooth and one wifi link at most" }
        if scenario.links.contains(where: { $0.kind == .wifiDirect }), radios[0] == nil || radios[1] == nil {
            return "wifi-direct links need the lab's Wi-Fi radios wlan0/wlan1 (scripts/harness-btlab.sh boots them for such scenarios)"
        }
        if let l = scenario.links.first(where: { $0.kind == .wifiDirect }),
           l.loss > 0 || scenario.events.contains(where: { $0.link == l.name && $0.action == .loss }) {
            return "loss on the Wi-Fi Direct group '\(l.name)' cannot be produced on the lab's radios"
        }
        if let l = bt.first, scenario.events.contains(where: { $0.link == l.name && $0.action == .loss }) {
            return "loss on the Bluetooth link '\(l.name)' cannot be produced on a real radio here"
        }
        if let l = bt.first, l.loss > 0 { return "loss on the Bluetooth link '\(l.name)' cannot be produced on a real radio here" }
        if !bt.isEmpty, controllers[firstController] == nil || controllers[firstController + 1] == nil {
            return "no lab controllers hci\(firstController)/hci\(firstController + 1) (run inside the lab: scripts/harness-btlab.sh)"
        }
        return nil
    }

    public func run(_ scenario: Scenario) async throws -> RunRecord {
        if let why = refusal(scenario) { throw HarnessError.unsupported(backend: name, reason: why) }
        let network = try BTLabRunNetwork(scenario, controllers: controllers, first: firstController, radios: radios)
        var run = InProcessRun(backend: name, network: network)
        run.sampleInterval = sampleInterval
        return try await run.run(scenario)
    }
}

/// A scenario a backend cannot run.
public enum HarnessError: Error, CustomStringConvertible {
    case unsupported(backend: String, reason: String)
    case command(String)
    /// The virtual-time run could not finish (it stalled, or overran its limit).
    case simulation(String)

    public var description: String {
        switch self {
        case let .unsupported(backend, reason): return "the \(backend) backend cannot run this scenario: \(reason)"
        case let .command(what): return what
        case let .simulation(why): return why
        }
    }
}

/// The lab's radios and a local IP path for one run.
final class BTLabRunNetwork: RunNetwork, @unchecked Sendable {
    let senderIndex: Int, receiverIndex: Int
    let senderAddress: String, receiverAddress: String
    /// The dummy interface and its two addresses (sender, receiver) for the wifi link.
    let interface = "plbt0"
    let senderIP = "10.66.0.1", receiverIP = "10.66.0.2"
    let table = "peerlink_btlab"
    private let lock = NSLock()
    private var poweredOff = false
    /// The Wi-Fi link's shape (nil: none) and the relay that applies it, made once the
    /// receiver's port is known.
    private let wifiShape: (delay: Int, bytesPerSecond: Int)?
    private var relay: DelayRelay?
    /// Keeps the receiver's controller connectable (bluetoothd turns that off; the receiver
    /// listens without advertising), as an application does through PeerLink.
    private let reachability: BluetoothReachability?
    /// The wifi-direct link and each side's upgrader on its own radio, if the scenario has one.
    let group: (spec: Scenario.LinkSpec, sender: WiFiDirectUpgrader, receiver: WiFiDirectUpgrader)?

    init(_ scenario: Scenario, controllers: [Int: String], first: Int, radios: [Int: (interface: String, bus: String)] = [:]) throws {
        senderIndex = first
        receiverIndex = first + 1
        senderAddress = controllers[first] ?? ""
        receiverAddress = controllers[first + 1] ?? ""
        wifiShape = scenario.links.first { $0.kind == .wifi && ($0.delay > 0 || $0.bandwidth > 0) }.map { ($0.delay, $0.bandwidth) }
        if let l = scenario.links.first(where: { $0.kind == .wifiDirect }), let r0 = radios[0], let r1 = radios[1] {
            group = (l, WiFiDirectUpgrader(wifi: WiFiDirect(busAddress: r0.bus), interface: r0.interface),
                     WiFiDirectUpgrader(wifi: WiFiDirect(busAddress: r1.bus), interface: r1.interface))
        } else {
            group = nil
        }
        if scenario.links.contains(where: { $0.kind == .bluetooth }) {
            let r = BluetoothReachability(adapterPath: "hci\(first + 1)")
            try r.ensure()
            reachability = r
        } else {
            reachability = nil
        }
        if scenario.links.contains(where: { $0.kind == .wifi }) {
            _ = try? Self.sh("ip", "link", "del", interface)
            _ = try? Self.sh("nft", "delete", "table", "inet", table)
            try Self.sh("ip", "link", "add", interface, "type", "dummy")
            try Self.sh("ip", "addr", "add", senderIP + "/32", "dev", interface)
            try Self.sh("ip", "addr", "add", receiverIP + "/32", "dev", interface)
            try Self.sh("ip", "link", "set", interface, "up")
            try Self.sh("nft", "add", "table", "inet", table)
            try Self.sh("nft", "add", "chain", "inet", table, "out", "{ type filter hook output priority 0 ; }")
        }
    }

    func transports(receiver: Bool, links: [Scenario.LinkSpec]) throws -> [Transport] {
        links.map { l -> Transport in
            switch l.kind {
            case .bluetooth: return RFCOMMTransport(adapterAddress: receiver ? receiverAddress : senderAddress)
            case .wifi, .wifiDirect: return TCPTransport(bindHost: receiver ? receiverIP : senderIP)  // wifi-direct: refused above
            }
        }
    }

    func endpoint(of link: Scenario.LinkSpec, ports: [Medium: UInt16]) -> TransportEndpoint {
        switch link.kind {
        case .bluetooth: return TransportEndpoint(medium: .rfcomm, host: receiverAddress, port: ports[.rfcomm] ?? 0)
        case .wifi, .wifiDirect:
            let port = ports[.tcp] ?? 0
            do {
                return TransportEndpoint(medium: .tcp, host: receiverIP, port: try shapedPort(for: port))
            } catch {
                FileHandle.standardError.write(Data("btlab: the Wi-Fi shaping relay did not start (\(error)); the link runs unshaped\n".utf8))
                return TransportEndpoint(medium: .tcp, host: receiverIP, port: port)
            }
        }
    }

    /// The port of the relay that shapes the Wi-Fi link in front of the receiver's `port`
    /// (started on first use), or `port` itself when the link has no shape.
    private func shapedPort(for port: UInt16) throws -> UInt16 {
        guard let wifiShape else { return port }
        return try lock.withLock {
            if let relay { return relay.port }
            let r = try DelayRelay(host: receiverIP, listenPort: 0, targetPort: port,
                                   delayMilliseconds: wifiShape.delay, bytesPerSecond: wifiShape.bytesPerSecond)
            relay = r
            return r.port
        }
    }

    func upgraders(receiver: Bool) -> [LinkUpgrader] {
        guard let group else { return [] }
        return [receiver ? group.receiver : group.sender]
    }

    func link(of snapshot: LinkSnapshot, in links: [Scenario.LinkSpec]) -> String? {
        if snapshot.medium == .wifiDirect { return group?.spec.name }
        let kind: Scenario.LinkSpec.Kind = snapshot.medium == .tcp ? .wifi : .bluetooth
        return links.first { $0.kind == kind }?.name
    }

    func setReachable(_ link: Scenario.LinkSpec, _ reachable: Bool) async throws {
        try await offThePool {
            switch link.kind {
            case .bluetooth: try self.power(reachable)
            case .wifi, .wifiDirect: try self.drop(reachable ? nil : 100)
            }
        }
    }

    func apply(_ e: Scenario.TimedEvent, to l: Scenario.LinkSpec, index: Int) async throws {
        if l.kind == .wifiDirect {
            // The system takes the group down on both radios: every link on it closes. A later
            // file forms a new one (the session negotiates again).
            guard let group, e.action == .off || e.action == .cut else { return }
            await group.sender.wifi.leaveAll()
            await group.receiver.wifi.leaveAll()
            return
        }
        try await offThePool { try self.applyNow(e, to: l) }
    }

    /// Runs blocking commands (btmgmt, nft, ip: hundreds of milliseconds each in the emulated
    /// VM) on a thread of their own, not on one of the two cooperative threads the nodes under
    /// test run on.
    private func offThePool(_ body: @escaping @Sendable () throws -> Void) async throws {
        try await BlockingCall.run("pl.lab", body)
    }

    private func applyNow(_ e: Scenario.TimedEvent, to l: Scenario.LinkSpec) throws {
        switch (l.kind, e.action) {
        case (.bluetooth, .off), (.bluetooth, .cut): try power(false)
        case (.bluetooth, .restore): try power(true)
        case (.bluetooth, .loss): throw HarnessError.unsupported(backend: "btlab", reason: "loss on a Bluetooth link")
        case (.wifi, .off):
            try drop(100)
            try Self.sh("ip", "link", "set", interface, "down")
        case (.wifi, .cut): try drop(100)
        case (.wifi, .restore):
            try drop(nil)
            try Self.sh("ip", "link", "set", interface, "up")
        case (.wifiDirect, _): break  // handled in apply
        case (.wifi, .loss):
            let percent = Int(((e.loss ?? 0) * 100).rounded())
            try drop(percent > 0 ? percent : nil)
        }
    }

    func notes(_ scenario: Scenario) -> [String] {
        var out: [String] = []
        if let bt = scenario.links.first(where: { $0.kind == .bluetooth && ($0.bandwidth > 0 || $0.delay > 0) }) {
            out.append("btlab: the Bluetooth link '\(bt.name)' runs at the virtual radio's own speed (its bandwidth and delay are not shaped)")
        }
        if let wifi = scenario.links.first(where: { $0.kind == .wifi && ($0.bandwidth > 0 || $0.delay > 0) }) {
            out.append("btlab: the Wi-Fi link '\(wifi.name)' is shaped by a userspace relay in front of the receiver"
                       + " (\(wifi.bandwidth > 0 ? "\(wifi.bandwidth) B/s" : "no rate limit"), \(wifi.delay) ms each way, on PeerLink's bytes)")
        }
        if let p2p = scenario.links.first(where: { $0.kind == .wifiDirect && ($0.bandwidth > 0 || $0.delay > 0) }) {
            out.append("btlab: the Wi-Fi Direct link '\(p2p.name)' is a group on the lab's hwsim radios and runs at their own speed (its bandwidth and delay are not shaped)")
        }
        if let bt = scenario.links.first(where: { $0.kind == .bluetooth }),
           scenario.events.contains(where: { $0.link == bt.name && $0.action == .cut }) {
            out.append("btlab: a radio cannot go silent here; cut on '\(bt.name)' powers its controller off")
        }
        return out
    }

    /// bluetoothd drops an ACL link a moment after its last channel closed: wait for that, so
    /// the next scenario's controllers do not share the emulator with lingering links.
    func settle() async {
        for _ in 0..<20 {
            let out = (try? Self.sh("hcitool", "con")) ?? ""
            if !out.contains(receiverAddress) && !out.contains(senderAddress) { return }
            try? await Task.sleep(nanoseconds: 250_000_000)
        }
    }

    func tearDown() async {
        let trace = RunTrace("btlab")
        trace("tear down")
        defer { trace("torn down") }
        if lock.withLock({ poweredOff }) { try? power(true) }
        reachability?.release()
        if let group {
            await group.sender.wifi.leaveAll()
            await group.receiver.wifi.leaveAll()
        }
        lock.withLock { relay }?.close()
        _ = try? Self.sh("nft", "delete", "table", "inet", table)
        _ = try? Self.sh("ip", "link", "del", interface)
    }

    /// Drops `percent` % of the wifi path's packets (100 = all, nil = none), in one nft
    /// transaction (a process start costs hundreds of milliseconds in the emulated VM).
    private func drop(_ percent: Int?) throws {
        var script = "flush chain inet \(table) out"
        if let percent {
            let match = "ip daddr { \(senderIP), \(receiverIP) }"
            script += percent >= 100 ? "; add rule inet \(table) out \(match) drop"
                                     : "; add rule inet \(table) out \(match) numgen random mod 100 < \(percent) drop"
        }
        try Self.sh("nft", script)
    }

    private func power(_ on: Bool) throws {
        try Self.sh("btmgmt", "--index", String(receiverIndex), "power", on ? "on" : "off")
        if on { try reachability?.ensure() }  // bluetoothd turned connectable off with the power
        lock.withLock { poweredOff = !on }
    }

    /// Runs a command (10 s limit); throws with its output when it fails.
    @discardableResult
    static func sh(_ args: String...) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        p.arguments = ["10"] + args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        p.standardInput = Pipe()  // btmgmt quits silently when stdin is at EOF
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard p.terminationStatus == 0 else {
            throw HarnessError.command("\(args.joined(separator: " ")) failed (exit \(p.terminationStatus)): \(text.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return text
    }
}
