import Foundation
import PeerLink
import PeerLinkCore
import PeerLinkDBus
import PeerLinkWire
import Synchronization

/// Advertises a PeerLink service over Bluetooth LE through bluetoothd's D-Bus API
/// (`org.bluez.LEAdvertisingManager1`): exports an `org.bluez.LEAdvertisement1` object whose
/// data is the §14.2 service data (type "peripheral", one Service Data field under the
/// service UUID, nothing else, so that Flags + data fit the 31-byte legacy PDU) and registers
/// it on one adapter.
///
/// With a `serviceRecord` (BluetoothServiceRecord's XML) it also registers an SDP record for
/// BR/EDR through `org.bluez.ProfileManager1.RegisterProfile`: a server-role profile with
/// that record and no channel or PSM of its own, so bluetoothd publishes the record on every
/// adapter but does not listen (the node's own sockets do). A record bluetoothd refuses is a
/// notice, not an error: the LE advertisement is what browsers look for first.
///
/// With a record (the node listens on BR/EDR), it also keeps the adapter connectable for
/// unpaired devices while it advertises (`BluetoothReachability`: bluetoothd turns that off),
/// and puts it back when it stops.
///
/// A watcher thread keeps both registered: bluetoothd leaving and returning to the bus, the
/// adapter disappearing or being powered off and on, and bluetoothd calling `Release` are
/// reported as notices, and the advertisement is registered again once possible.
package final class BlueZAdvertiser: @unchecked Sendable {
    /// The service advertised.
    package let service: ServiceType
    /// What the LE advertisement carries: the peer-ID prefix, RFCOMM channel and L2CAP PSM.
    package let advert: BluetoothAdvert
    /// The adapter name (`hci1`), or nil for the first powered one.
    package let adapter: String?
    /// The SDP record's XML, or nil for none.
    package let serviceRecord: String?
    private let busAddress: String?
    private let notices: @Sendable (String) -> Void
    private let pollInterval: Double
    private let objectPath: String
    private let profilePath: String
    /// The bluetoothd (unique bus name) the SDP profile is registered with, if any.
    private var profileOwner: String?
    /// The bluetoothd that refused the record: not asked again (one notice per daemon).
    private var profileRefusedBy: String?

    private let lock = NSLock()
    private var stopped = false
    private var started = false
    private var server: DBusObjectServer?
    private var query: DBusConnection?
    /// Where the advertisement is registered (adapter path) and with which bluetoothd
    /// (its unique bus name); nil when not registered.
    private var registration: (adapter: String, owner: String)?
    /// Set when bluetoothd says an adapter was powered off (a signal, so that a power cycle
    /// shorter than a poll is not missed): the next poll registers afresh.
    private var poweredOff = false
    private let watcherDone = DispatchSemaphore(value: 0)
    /// Keeps the advertised adapter connectable (BR/EDR only); the last outcome noticed.
    private var reachability: BluetoothReachability?
    private var reachabilityNote: String?

    /// Numbers the advertisers of this process, for their object paths.
    private static let counter = Atomic<Int>(0)

    /// Makes an advertiser; nothing is registered until `start()`.
    /// - Parameters:
    ///   - service: the service advertised.
    ///   - advert: the LE advertisement's service data (peer-ID prefix, channel, PSM).
    ///   - adapter: the adapter name (`hci1`), or nil for the first powered one.
    ///   - serviceRecord: the SDP record's XML for BR/EDR, or nil to advertise on LE only.
    ///   - busAddress: the D-Bus address bluetoothd is on; nil for the system bus.
    ///   - pollInterval: seconds between two looks at bluetoothd and the adapter.
    ///   - notices: gets human-readable changes (bluetoothd restarted, record refused), on the
    ///     advertiser's threads.
    package init(service: ServiceType, advert: BluetoothAdvert, adapter: String? = nil, serviceRecord: String? = nil,
                busAddress: String? = nil, pollInterval: Double = 0.5, notices: @escaping @Sendable (String) -> Void) {
        self.service = service
        self.pollInterval = pollInterval
        self.advert = advert
        self.adapter = adapter
        self.serviceRecord = serviceRecord
        self.busAddress = busAddress
        self.notices = notices
        let n = Self.counter.add(1, ordering: .relaxed).newValue
        objectPath = "/org/peerlink/advertisement/p\(getpid())_\(n)"
        profilePath = "/org/peerlink/profile/p\(getpid())_\(n)"
    }

    deinit { stop() }

    /// The `org.bluez.LEAdvertisement1` properties bluetoothd reads.
    var advertisementProperties: [String: DBusValue] {
        [
            "Type": .string("peripheral"),
            // General discoverable whatever the adapter's Discoverable setting: a browser's
            // discovery (StartDiscovery) ignores LE adverts without a discoverable flag, and an
            // adapter is not discoverable after a power cycle.
            "Discoverable": .bool(true),
            "ServiceData": .propertyDictionary([BluetoothServiceUUID.string(for: service): .bytes(advert.encode())]),
        ]
    }

    /// Registers the advertisement; throws a `BlueZError` when there is no bus, no
    /// bluetoothd, no such adapter, an adapter without LE advertising, a powered-off adapter,
    /// or when bluetoothd refuses the registration (with its error name and message). Then
    /// keeps it registered until `stop()`.
    package func start() throws {
        try lock.withLock {
            guard !started else { throw BlueZError.call("the advertiser was already started") }
            started = true
        }
        let q: DBusConnection
        let s: DBusObjectServer
        do {
            q = try DBusConnection(address: busAddress)
            s = try DBusObjectServer(address: busAddress)
        } catch let f as DBusFailure { throw BlueZError(f) }
        s.export(objectPath, exportedObject())
        if serviceRecord != nil { s.export(profilePath, profileObject()) }
        watchPower(s)
        lock.withLock { query = q; server = s }
        do {
            let (path, owner) = try usableAdapter(q)
            try register(s, adapterPath: path, owner: owner)
        } catch {
            s.stop()
            lock.withLock { query = nil; server = nil }
            throw error
        }
        // The watcher registers the SDP record and makes the adapter connectable first (about a
        // second, most of it waiting for `discoverable` to end), so that start() returns as
        // soon as the LE advert, which browsers look for, is up.
        let (adapterPath, owner) = lock.withLock { (registration?.adapter, registration?.owner) }
        let thread = Thread { [self] in
            if let owner, let server = lock.withLock({ server }) { registerProfile(server, owner: owner) }
            if let adapterPath { keepReachable(adapterPath) }
            watch()
        }
        thread.name = "peerlink-bluez-advertise"
        thread.start()
    }

    /// Unregisters the advertisement and closes the connections. Idempotent.
    package func stop() {
        let (s, reg, wasStarted): (DBusObjectServer?, (adapter: String, owner: String)?, Bool) = lock.withLock {
            guard !stopped else { return (nil, nil, false) }
            stopped = true
            let r = (server, registration, started && server != nil)
            server = nil
            query = nil
            registration = nil
            return r
        }
        guard let s else { return }
        if wasStarted { watcherDone.wait() }
        if let reg {
            _ = try? s.call(BlueZObjects.service, reg.adapter, "org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement",
                            [.objectPath(objectPath)], timeoutMillis: 3000)
        }
        lock.withLock { () -> BluetoothReachability? in defer { reachability = nil }; return reachability }?.release()
        if lock.withLock({ profileOwner }) != nil {
            _ = try? s.call(BlueZObjects.service, "/org/bluez", "org.bluez.ProfileManager1", "UnregisterProfile",
                            [.objectPath(profilePath)], timeoutMillis: 3000)
        }
        s.unexport(objectPath)
        if serviceRecord != nil { s.unexport(profilePath) }
        s.stop()
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func exportedObject() -> DBusExportedObject {
        DBusExportedObject(
            properties: ["org.bluez.LEAdvertisement1": advertisementProperties],
            methods: ["org.bluez.LEAdvertisement1.Release": { [weak self] _ in
                self?.released()
                return .success([])
            }])
    }

    /// The `org.bluez.Profile1` object of the SDP record. bluetoothd listens on nothing for it,
    /// so it never hands a connection over; one that came anyway is refused.
    private func profileObject() -> DBusExportedObject {
        DBusExportedObject(
            properties: [:],
            methods: [
                "org.bluez.Profile1.Release": { [weak self] _ in
                    self?.lock.withLock { self?.profileOwner = nil }
                    return .success([])
                },
                "org.bluez.Profile1.NewConnection": { _ in
                    .failure(.call(name: "org.bluez.Error.Rejected", message: "PeerLink accepts connections on its own sockets"))
                },
                "org.bluez.Profile1.RequestDisconnection": { _ in .success([]) },
            ])
    }

    /// Registers the SDP record with the bluetoothd that is `owner`, unless done already.
    private func registerProfile(_ s: DBusObjectServer, owner: String) {
        guard let serviceRecord, lock.withLock({ profileOwner != owner && profileRefusedBy != owner }) else { return }
        let options: [String: DBusValue] = [
            "Name": .string("PeerLink \(service.name)"),
            "Role": .string("server"),
            "ServiceRecord": .string(serviceRecord),
        ]
        do {
            _ = try s.call(BlueZObjects.service, "/org/bluez", "org.bluez.ProfileManager1", "RegisterProfile",
                           [.objectPath(profilePath), .string(BluetoothServiceUUID.string(for: service)), .propertyDictionary(options)],
                           timeoutMillis: 10000)
            lock.withLock { profileOwner = owner }
        } catch let f as DBusFailure {
            if case let .call(name, _) = f, name == "org.bluez.Error.AlreadyExists" {
                lock.withLock { profileOwner = owner }
                return
            }
            lock.withLock { profileRefusedBy = owner }
            notices("SDP record not registered (peers still find this node through its LE advertisement): \(f)")
        } catch {
            lock.withLock { profileRefusedBy = owner }
            notices("SDP record not registered: \(error)")
        }
    }

    private func released() {
        let was = lock.withLock { () -> Bool in
            let w = registration != nil
            registration = nil
            return w
        }
        if was { notices("bluetoothd released the LE advertisement; registering again when possible") }
    }

    /// The adapter to advertise on (its object path) and bluetoothd's unique name, or the
    /// `BlueZError` saying why advertising is impossible now.
    private func usableAdapter(_ q: DBusConnection) throws -> (String, String) {
        let objects = try BlueZObjects.managedObjects(q)
        let owner: String
        do {
            owner = try q.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
                               [.string(BlueZObjects.service)]).first?.string ?? ""
        } catch let f as DBusFailure { throw BlueZError(f) }
        let adapters = objects.compactMap { path, ifaces in
            ifaces["org.bluez.Adapter1"].map { BlueZAdapter(path: path, address: $0["Address"]?.string ?? "", powered: $0["Powered"]?.bool ?? false) }
        }.sorted { $0.path < $1.path }
        let a = try BlueZObjects.choose(adapter, from: adapters)
        guard objects[a.path]?["org.bluez.LEAdvertisingManager1"] != nil else {
            throw BlueZError.call("adapter \(a.name) has no org.bluez.LEAdvertisingManager1 (no LE support, or bluetoothd too old)")
        }
        guard a.powered else { throw BlueZError.call("adapter \(a.name) is powered off; cannot advertise") }
        return (a.path, owner)
    }

    private func register(_ s: DBusObjectServer, adapterPath: String, owner: String) throws {
        do {
            _ = try s.call(BlueZObjects.service, adapterPath, "org.bluez.LEAdvertisingManager1", "RegisterAdvertisement",
                           [.objectPath(objectPath), .emptyArray(elementSignature: "{sv}")], timeoutMillis: 10000)
        } catch let f as DBusFailure {
            if case .busUnavailable = f { throw BlueZError(f) }
            if BlueZError(f) == .noAnswer { throw BlueZError.noAnswer }
            // Still registered from before (bluetoothd kept it across a power cycle): fine.
            if case let .call(name, _) = f, name == "org.bluez.Error.AlreadyExists" {
                lock.withLock { registration = (adapterPath, owner) }
                return
            }
            throw BlueZError.call("bluetoothd refused the LE advertisement on \(adapterPath): \(f)")
        }
        lock.withLock { registration = (adapterPath, owner) }
    }

    /// Polls bluetoothd and the adapter; registers again after a restart, a power cycle or a
    /// `Release`, with one notice per change.
    private func watch() {
        defer { watcherDone.signal() }
        var lastProblem: String? = nil
        var lastOwner = lock.withLock { registration?.owner }
        while !isStopped {
            Thread.sleep(forTimeInterval: pollInterval)
            guard !isStopped, let pair = lock.withLock({ query.flatMap { q in server.map { (q, $0) } } }) else { break }
            let (q, s) = pair
            do {
                if s.isDisconnected { throw BlueZError.busUnavailable("the bus connection closed") }
                let (path, owner) = try usableAdapter(q)
                if let old = lastOwner, old != owner {
                    lock.withLock { registration = nil }
                    notices("bluetoothd restarted (\(old) → \(owner)); registering the LE advertisement again")
                }
                lastOwner = owner
                registerProfile(s, owner: owner)
                keepReachable(path)
                let (reg, cycled) = lock.withLock { () -> ((adapter: String, owner: String)?, Bool) in
                    defer { poweredOff = false }
                    return (registration, poweredOff)
                }
                // After any pause, register afresh: a powered-off controller drops its
                // advertising instances and bluetoothd (5.66) neither restores them on power on
                // nor calls Release. Its registration is then an empty one, and registering
                // again only answers AlreadyExists: so unregister first, on the adapter we had
                // and on this one, whatever `registration` says.
                if reg == nil || reg?.adapter != path || lastProblem != nil || cycled {
                    for adapter in Set([reg?.adapter, path].compactMap { $0 }) {
                        _ = try? s.call(BlueZObjects.service, adapter, "org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement",
                                        [.objectPath(objectPath)], timeoutMillis: 3000)
                    }
                    lock.withLock { registration = nil }
                    try register(s, adapterPath: path, owner: owner)
                    notices("LE advertisement registered again on \(path)")
                }
                lastProblem = nil
            } catch {
                let text = "LE advertising paused: \(error)"
                // bluetoothd drops the advertisement when the adapter is powered off (the
                // kernel instance is removed), when the adapter goes, and when it exits: in
                // every case register again once things are back (above).
                if (error as? BlueZError).map({ if case .busUnavailable = $0 { return false } else { return true } }) ?? true {
                    lock.withLock { registration = nil }
                }
                if lastProblem != text { notices(text); lastProblem = text }
                if case .busUnavailable? = error as? BlueZError { reconnect() }
            }
        }
    }

    /// Makes the adapter at `path` connectable if it is not (BR/EDR nodes only), with one
    /// notice per change of outcome: bluetoothd turns connectable off again after a power cycle.
    private func keepReachable(_ path: String) {
        guard serviceRecord != nil, !isStopped else { return }
        let (r, old) = lock.withLock { () -> (BluetoothReachability, BluetoothReachability?) in
            if let r = reachability, r.adapterPath == path { return (r, nil) }
            let fresh = BluetoothReachability(adapterPath: path, busAddress: busAddress)
            defer { reachability = fresh }
            return (fresh, reachability)
        }
        old?.release()
        let note: String?
        do {
            switch try r.ensure() {
            case .connectable, .poweredOff: note = nil
            case .madeConnectable:
                note = "\(r.adapterName) made connectable through bluetoothd (discoverable for 1 s, Adapter1.Discoverable) so that unpaired peers can connect; put back when advertising stops"
            case .noBREDR: note = "BR/EDR is off on \(r.adapterName): peers cannot connect over RFCOMM or L2CAP BR/EDR (`btmgmt --index N bredr on`)"
            }
        } catch {
            note = "peers cannot connect to \(r.adapterName) over BR/EDR: \(error)"
        }
        let fresh = lock.withLock { () -> Bool in
            defer { reachabilityNote = note ?? reachabilityNote }
            return note != nil && note != reachabilityNote
        }
        if fresh, let note { notices(note) }
    }

    /// Follows bluetoothd's `Powered` changes on `s`: a powered-off controller drops its
    /// advertising instance, and a power cycle can fall between two polls. Without the
    /// signals (a bus that refuses the match) the polls alone remain.
    private func watchPower(_ s: DBusObjectServer) {
        let rule = "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='org.bluez.Adapter1'"
        try? s.addMatch(rule) { [weak self] path, _, _, args in
            guard let self, args.count > 1, case let .array(entries) = args[1] else { return }
            let off = entries.contains { e in
                guard case let .dictEntry(key, value) = e else { return false }
                return key.string == "Powered" && value.unwrapped.bool == false
            }
            if off { self.lock.withLock { if self.registration?.adapter == path { self.poweredOff = true } } }
        }
    }

    /// Replaces both connections after the bus went away (dbus-daemon restarted).
    private func reconnect() {
        do {
            let q = try DBusConnection(address: busAddress)
            let s = try DBusObjectServer(address: busAddress)
            s.export(objectPath, exportedObject())
            watchPower(s)
            let old: DBusObjectServer? = lock.withLock {
                guard !stopped else { return s }
                let o = server
                query = q
                server = s
                registration = nil
                return o
            }
            old?.stop()
        } catch {
            return  // still no bus; the next poll tries again
        }
    }
}
