import Foundation
import PeerLink
import PeerLinkCore
import PeerLinkWire

/// Discovery over Bluetooth through bluetoothd's D-Bus API, on behalf of one node.
///
/// Publishing registers the node's LE advertisement (service data with its peer-ID prefix,
/// RFCOMM channel and L2CAP PSM, PROTOCOL §14.2) and its SDP record for BR/EDR (§14.1). Browsing reads other nodes' adverts and,
/// since an advert carries only 6 bytes of the peer ID, connects once to each new device with
/// the node's identity to learn its full peer ID, display name and discovery info (§14.3)
/// before reporting it as found. Missing bus, daemon or adapter are thrown as `BlueZError`;
/// later trouble (adapter off or removed, bluetoothd restarting) arrives as notices and
/// lost/found events.
public final class BlueZDiscovery: Discovery, Sendable {
    /// The node whose identity resolves the devices found, and whose ports are published.
    public let node: Node
    /// The adapter name (`hci1`), or nil for the first powered one.
    public let adapter: String?
    private let busAddress: String?
    private let pollInterval: Double
    /// How long one resolution (connect + handshake) may take.
    public let resolveTimeout: Duration

    /// Makes discovery for `node` on `adapter` (nil: the first powered one), reached on
    /// `busAddress` (nil: the system bus); browsing polls every `pollInterval` and gives each
    /// resolution `resolveTimeout`.
    public init(node: Node, adapter: String? = nil, busAddress: String? = nil, pollInterval: Duration = .milliseconds(500),
                resolveTimeout: Duration = .seconds(15)) {
        self.node = node
        self.adapter = adapter
        self.busAddress = busAddress
        self.pollInterval = pollInterval.inSeconds
        self.resolveTimeout = resolveTimeout
    }

    struct Handle: DiscoveryHandle {
        let onStop: @Sendable () -> Void
        func stop() { onStop() }
    }

    public func publish(_ advertisement: Advertisement, service: ServiceType, ports: [Medium: UInt16],
                        notices: @escaping @Sendable (String) -> Void) throws -> DiscoveryHandle {
        let channel = ports[.rfcomm].flatMap { UInt8(exactly: $0) }
        let psm = ports[.l2cap]
        guard channel != nil || psm != nil else {
            throw TransportError.unsupported("the node listens on no Bluetooth transport (RFCOMM or L2CAP), so there is nothing to advertise over Bluetooth")
        }
        let advert = try BluetoothAdvert(peerID: advertisement.peerID, rfcommChannel: channel, l2capPSM: psm)
        // An LE channel has no SDP record and needs no BR/EDR reachability (PROTOCOL §14.2:
        // an LE PSM is 0x0081–0x00FF).
        let overLE = (node.transports.first { $0.medium == .l2cap } as? L2CAPTransport)?.mode == .le
        let record = BluetoothServiceRecord.xml(service: service, rfcommChannel: channel, l2capPSM: overLE ? nil : psm)
        let advertiser = BlueZAdvertiser(service: service, advert: advert, adapter: adapter, serviceRecord: record,
                                         busAddress: busAddress, notices: notices)
        try advertiser.start()
        return Handle { advertiser.stop() }
    }

    public func browse(_ service: ServiceType, handler: @escaping @Sendable (DiscoveryEvent) -> Void) throws -> DiscoveryHandle {
        let run = BluetoothBrowseRun(node: node, timeout: resolveTimeout.inSeconds, handler: handler)
        let browser = BlueZBrowser(service: service, adapter: adapter, busAddress: busAddress, pollInterval: .seconds(pollInterval)) { event in
            run.handle(event)
        }
        try browser.start()
        return Handle {
            browser.stop()
            run.stop()
        }
    }
}

/// One browse: feeds BlueZBrowser's sightings into `BluetoothResolutions` and runs its actions.
final class BluetoothBrowseRun: @unchecked Sendable {
    private let node: Node
    private let timeout: Double
    private let handler: @Sendable (DiscoveryEvent) -> Void
    private let lock = NSLock()
    private var table = BluetoothResolutions()
    private var tasks: [String: Task<Void, Never>] = [:]  // resolutions by device address
    private var stopped = false
    private let events = DispatchQueue(label: "peerlink-bluez-discovery-events")

    init(node: Node, timeout: Double, handler: @escaping @Sendable (DiscoveryEvent) -> Void) {
        self.node = node
        self.timeout = timeout
        self.handler = handler
    }

    func handle(_ event: BlueZBrowser.Event) {
        switch event {
        case let .found(s), let .updated(s): apply { $0.sighted(s) }
        case let .lost(address):
            lock.withLock { tasks.removeValue(forKey: address)?.cancel() }
            apply { $0.lost(address: address) }
        case let .notice(text):
            let handler = self.handler
            lock.withLock { events.async { handler(.notice(text)) } }
        }
    }

    func stop() {
        let running = lock.withLock {
            stopped = true
            defer { tasks = [:] }
            return Array(tasks.values)
        }
        for t in running { t.cancel() }
    }

    /// Runs one step of the table. Events are queued in the order the table produced them
    /// (under the lock) and delivered on a serial queue outside it, so a resolution finishing
    /// on a task and a loss reported by the browser thread never swap their events.
    private func apply(_ step: (inout BluetoothResolutions) -> [BluetoothResolutions.Action]) {
        let resolves: [(BluetoothSighting, Int, Double)] = lock.withLock {
            guard !stopped else { return [] }
            var out: [(BluetoothSighting, Int, Double)] = []
            for action in step(&table) {
                switch action {
                case let .emit(event):
                    let handler = self.handler
                    events.async { handler(event) }
                case let .resolve(sighting, generation, after):
                    out.append((sighting, generation, after))
                }
            }
            return out
        }
        for (sighting, generation, after) in resolves { launch(sighting, generation: generation, after: after) }
    }

    private func launch(_ s: BluetoothSighting, generation: Int, after delay: Double) {
        let node = self.node, timeout = self.timeout
        let task = Task { [weak self] in
            if delay > 0 { try? await Task.sleep(nanoseconds: UInt64(delay * 1e9)) }
            guard !Task.isCancelled else { return }
            do {
                let peer = try await node.resolve(s.endpoints, expectingPrefix: s.advert.peerIDPrefix, timeout: .seconds(timeout))
                guard !Task.isCancelled else { return }
                self?.apply { $0.resolved(address: s.address, generation: generation, as: peer) }
            } catch {
                guard !Task.isCancelled else { return }
                let reason: String
                if case let PeerLinkError.unresolved(_, failures) = error { reason = failures.map(\.description).joined(separator: "; ") } else { reason = "\(error)" }
                self?.apply { $0.failed(address: s.address, generation: generation, reason: reason) }
            }
        }
        lock.withLock {
            tasks[s.address]?.cancel()
            tasks[s.address] = task
        }
    }
}
