import Foundation
import PeerLink
import PeerLinkCore
import PeerLinkDBus
import PeerLinkWire
import Synchronization

/// Finds devices advertising a PeerLink service through bluetoothd's D-Bus API: sets a
/// discovery filter, starts discovery on one adapter, and reads `Device1` objects (polling
/// `GetManagedObjects` from a task, each poll on the blocking pool) into found / updated / lost
/// sightings.
///
/// bluetoothd leaving the bus, the adapter being powered off or removed all report the
/// adapter's devices as lost plus a notice; discovery restarts when they return, also when
/// the adapter was reset or replaced between two polls (its `Discovering` property says so).
package final class BlueZBrowser: Sendable {
    /// What the browser reports.
    package enum Event: Equatable, Sendable {
        /// `found`: a device advertising the service appeared; `updated`: its advert or signal
        /// strength changed; `lost`: the device at `address` stopped advertising it or was dropped by
        /// bluetoothd, or the adapter or bluetoothd went away.
        case found(BluetoothSighting), updated(BluetoothSighting), lost(address: String)
        /// Something the user should know: a device ignored and why, the adapter off or removed,
        /// bluetoothd gone.
        case notice(String)
    }

    /// The service browsed for.
    package let service: ServiceType
    /// The adapter name (`hci1`), or nil for the first powered one.
    package let adapter: String?
    private let busAddress: String?
    private let interval: Double
    private let handler: @Sendable (Event) -> Void
    private let lifecycle = Mutex<(stopped: Bool, polling: Task<Void, Never>?)>((false, nil))

    /// Makes a browser for `service` on `adapter` (nil: the first powered one), reached on
    /// `busAddress` (nil: the system bus), polling bluetoothd every `pollInterval`.
    /// `handler` gets the events in order, one poll at a time. Nothing happens until `start()`.
    package init(service: ServiceType, adapter: String? = nil, busAddress: String? = nil, pollInterval: Duration = .milliseconds(500),
                handler: @escaping @Sendable (Event) -> Void) {
        self.service = service
        self.adapter = adapter
        self.busAddress = busAddress
        self.interval = pollInterval.inSeconds
        self.handler = handler
    }

    /// Connects and checks BlueZ once (so a missing bus, daemon or adapter is a thrown
    /// `BlueZError`), then browses until `stop()`: a task polls, sleeping between polls.
    package func start() throws {
        let bus: DBusConnection
        do { bus = try DBusConnection(address: busAddress) } catch let f as DBusFailure { throw BlueZError(f) }
        let chosen = try BlueZObjects.choose(adapter, from: try BlueZObjects.adapters(bus))
        let task = Task.detached { [self] in await run(bus, firstAdapter: chosen) }
        lifecycle.withLock { $0.polling = task }
    }

    /// Stops browsing: the polling task ends after its current poll (at once if it sleeps).
    package func stop() { lifecycle.withLock { s -> Task<Void, Never>? in s.stopped = true; return s.polling }?.cancel() }

    private var isStopped: Bool { lifecycle.withLock { $0.stopped } }

    /// What one poll leaves for the next (touched by one poll at a time).
    private final class PollState: @unchecked Sendable {
        var tracker: BlueZDeviceTracker
        var adapterPath: String? = nil  // where discovery is running
        var lastProblem: String? = nil
        init(_ tracker: BlueZDeviceTracker) { self.tracker = tracker }
    }

    private func run(_ bus: DBusConnection, firstAdapter: BlueZAdapter) async {
        let state = PollState(BlueZDeviceTracker(serviceUUID: BluetoothServiceUUID.string(for: service)))
        while !isStopped {
            await BlockingCall.run("bluez.browse") { [self] in poll(bus, firstAdapter: firstAdapter, state) }
            try? await Runtime.sleep(seconds: interval)
        }
        if let p = state.adapterPath {
            await BlockingCall.run("bluez.browse.stop") {
                _ = try? bus.call(BlueZObjects.service, p, "org.bluez.Adapter1", "StopDiscovery")
            }
        }
    }

    /// One look at bluetoothd's objects: (re)starts discovery where needed and reports changes.
    private func poll(_ bus: DBusConnection, firstAdapter: BlueZAdapter, _ state: PollState) {
        func emit(_ events: [BlueZDeviceTracker.Event]) {
            for e in events {
                switch e {
                case let .found(s): handler(.found(s))
                case let .updated(s): handler(.updated(s))
                case let .lost(a): handler(.lost(address: a))
                case let .notice(n): handler(.notice(n))
                }
            }
        }
        func problem(_ text: String) {
            emit(state.tracker.removeAll())
            state.adapterPath = nil
            if state.lastProblem != text { handler(.notice(text)); state.lastProblem = text }
        }
        do {
            let objects = try BlueZObjects.managedObjects(bus)
            let adapters = objects.compactMap { path, ifaces in
                ifaces["org.bluez.Adapter1"].map { BlueZAdapter(path: path, address: $0["Address"]?.string ?? "", powered: $0["Powered"]?.bool ?? false) }
            }.sorted { $0.path < $1.path }
            let a = try BlueZObjects.choose(adapter ?? firstAdapter.name, from: adapters)
            guard a.powered else { throw BlueZError.call("adapter \(a.name) is powered off") }
            if state.adapterPath != a.path {
                try startDiscovery(bus, a.path)
                state.adapterPath = a.path
                if state.lastProblem != nil { handler(.notice("browsing again on \(a.name)")) }
                state.lastProblem = nil
            } else if objects[a.path]?["org.bluez.Adapter1"]?["Discovering"]?.bool == false,
                      try resumeDiscoveryIfLost(bus, a.path) {
                // Powered off and on, or unplugged and back under the same name, between
                // two polls: bluetoothd dropped our discovery without our seeing a gap.
                handler(.notice("discovery on \(a.name) had stopped (adapter reset or replaced); browsing again on \(a.name)"))
            }
            var present = Set<String>()
            for (path, ifaces) in objects where path.hasPrefix(a.path + "/") {
                guard let dev = ifaces["org.bluez.Device1"] else { continue }
                present.insert(path)
                emit(state.tracker.device(at: path, properties: dev))
            }
            for path in state.tracker.known.keys where !present.contains(path) { emit(state.tracker.removed(path)) }
        } catch {
            problem("Bluetooth browsing paused: \(error)")
        }
    }

    // No UUID filter: the service UUID travels only as a service-data key (§14.2), which
    // BlueZ's UUID filter does not match on every version; the tracker filters instead.
    // LE only: peers are found by their LE adverts alone, and a BR/EDR inquiry interleaved
    // with the LE scan ("auto") holds the adapter's own connects back while it runs (the
    // kernel starts an LE connect only once discovery pauses: a resolution waited 9.7 s
    // for a 5.1 s inquiry in the lab).
    private static let filter: DBusValue = .array([
        .dictEntry(.string("Transport"), .variant(.string("le"))),
        .dictEntry(.string("DuplicateData"), .variant(.bool(true))),
    ])

    /// The adapter says it is not discovering, which it also does between two scans of one
    /// discovery. bluetoothd refuses a second StartDiscovery from a client whose discovery
    /// still runs (InProgress): then nothing changes. If it accepts, ours was gone; it runs
    /// again with our filter, and the answer is true.
    private func resumeDiscoveryIfLost(_ bus: DBusConnection, _ path: String) throws -> Bool {
        do {
            _ = try bus.call(BlueZObjects.service, path, "org.bluez.Adapter1", "StartDiscovery")
        } catch let f as DBusFailure where f.description.contains("InProgress") {
            return false
        } catch let f as DBusFailure {
            throw BlueZError(f)
        }
        do {
            _ = try bus.call(BlueZObjects.service, path, "org.bluez.Adapter1", "SetDiscoveryFilter", [Self.filter])
        } catch let f as DBusFailure {
            throw BlueZError(f)
        }
        return true
    }

    private func startDiscovery(_ bus: DBusConnection, _ path: String) throws {
        do {
            _ = try bus.call(BlueZObjects.service, path, "org.bluez.Adapter1", "SetDiscoveryFilter", [Self.filter])
            _ = try bus.call(BlueZObjects.service, path, "org.bluez.Adapter1", "StartDiscovery")
        } catch let f as DBusFailure where f.description.contains("InProgress") {
            return  // already discovering (another client on the adapter)
        } catch let f as DBusFailure {
            throw BlueZError(f)
        }
    }
}
