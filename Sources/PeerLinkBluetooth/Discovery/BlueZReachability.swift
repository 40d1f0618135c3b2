import Foundation
import PeerLink
import PeerLinkDBus
import Synchronization

/// Keeps a Bluetooth adapter connectable for devices it has never paired with, through
/// bluetoothd's D-Bus API, and puts it back as bluetoothd had it when released.
///
/// bluetoothd (with the kernel's connection control, every kernel since 4.x) turns the
/// `connectable` setting off when it takes an adapter over: the controller then answers pages
/// only from paired devices, and a PeerLink peer's RFCOMM or L2CAP connect ends in a page
/// timeout (`EHOSTDOWN`). bluetoothd 5.66 offers one D-Bus way to turn it on: setting
/// `org.bluez.Adapter1.Discoverable`, which makes the adapter connectable first. With
/// `DiscoverableTimeout` at 1 s for that moment (the user's value is put back), the kernel
/// clears `discoverable` a second later and leaves `connectable` on, so the adapter stays
/// reachable, and not discoverable, for as long as it is held. Turning `Discoverable` off is
/// how bluetoothd turns `connectable` off, which `release()` does.
///
/// Applications that listen on BR/EDR without a PeerLink advertiser (peers dial a known
/// address) hold one themselves.
///
/// Blocking (D-Bus and mgmt calls with timeouts): use it from a thread that may block.
public final class BluetoothReachability: Sendable {
    /// What `ensure()` found or did.
    public enum Outcome: Equatable, Sendable {
        /// Connectable already (another program, a paired-devices setup, or an earlier call).
        case connectable
        /// Was not; PeerLink made it connectable through bluetoothd.
        case madeConnectable
        /// BR/EDR is off on this controller: only LE can reach it.
        case noBREDR
        /// The controller is powered off; nothing was changed.
        case poweredOff
    }

    /// bluetoothd's object path of the adapter (`/org/bluez/hci1`).
    public let adapterPath: String
    private let busAddress: String?
    /// Whether `ensure()` made the adapter connectable and `release()` has not undone it.
    private let changed = Mutex(false)

    /// Changes nothing until `ensure()`.
    /// - Parameters:
    ///   - adapterPath: `/org/bluez/hciN` (or just `hciN`).
    ///   - busAddress: the D-Bus address bluetoothd is on; nil for the system bus.
    public init(adapterPath: String, busAddress: String? = nil) {
        self.adapterPath = adapterPath.hasPrefix("/") ? adapterPath : "/org/bluez/\(adapterPath)"
        self.busAddress = busAddress
    }

    deinit { release() }

    /// The adapter's kernel name (`hci1`), the last part of `adapterPath`.
    public var adapterName: String { adapterPath.split(separator: "/").last.map(String.init) ?? adapterPath }

    /// The controller's settings now (the kernel's view, through mgmt).
    public func info() throws -> ControllerInfo {
        guard let index = ManagementSocket.index(of: adapterPath) else {
            throw ManagementError.system("\(adapterPath) is not an hciN adapter")
        }
        return try ManagementSocket.controllerInfo(index: index)
    }

    /// Makes the adapter connectable unless it is; throws when bluetoothd refuses or the
    /// adapter stays unconnectable (with what to do). Takes about a second when it acts: the
    /// adapter is discoverable for one second only (below).
    @discardableResult
    public func ensure() throws -> Outcome {
        let before = try info()
        guard before.current.contains(.powered) else { return .poweredOff }
        guard before.current.contains(.bredr) else { return .noBREDR }
        if before.current.contains(.connectable) { return .connectable }
        // Discoverable for one second, not bluetoothd's DiscoverableTimeout (180 s): bluetoothd
        // 5.66 re-adds its LE adverts when `discoverable` changes, and when that fails (the
        // controller powering off while discoverable) it replies to a message that does not
        // exist and libdbus aborts it (seen in the lab). Once the kernel has cleared
        // `discoverable`, a power cycle changes nothing bluetoothd reacts to.
        let timeout = try getProperty("DiscoverableTimeout")?.unwrapped
        let shortened: Bool
        if case let .uint32(original)? = timeout, original != 1 {
            try setProperty("DiscoverableTimeout", .uint32(1))
            shortened = true
        } else {
            shortened = false
        }
        var outcome: Result<ControllerInfo, Error> = Result { try setProperty("Discoverable", .bool(true)); return try info() }
        if shortened {
            // Put the user's timeout back once discoverable is over (setting it while
            // discoverable would start it again with the long timeout).
            let deadline = Date().addingTimeInterval(5)
            while case let .success(i) = outcome, i.current.contains(.discoverable), Date() < deadline {
                Thread.sleep(forTimeInterval: 0.1)
                outcome = Result { try info() }
            }
            if let timeout { try? setProperty("DiscoverableTimeout", timeout) }
        }
        let after = try outcome.get()
        guard after.current.contains(.connectable) else {
            throw BlueZError.call("bluetoothd set Discoverable on \(adapterName) but the controller is still not connectable (settings: \(after.current.names.joined(separator: " ")))")
        }
        changed.withLock { $0 = true }
        return .madeConnectable
    }

    /// Undoes what `ensure()` changed, if anything: turns `Discoverable` off, which makes
    /// bluetoothd turn `connectable` off. Idempotent; errors are ignored (bluetoothd gone,
    /// adapter gone: nothing left to restore).
    public func release() {
        guard changed.withLock({ c -> Bool in defer { c = false }; return c }) else { return }
        guard let now = try? info(), now.current.contains(.connectable) else { return }
        // After the discoverable timeout only `connectable` is left on; bluetoothd clears it
        // only together with `discoverable`, so turn that on for the moment it takes.
        if !now.current.contains(.discoverable) { try? setDiscoverable(true) }
        try? setDiscoverable(false)
    }

    private func setDiscoverable(_ on: Bool) throws { try setProperty("Discoverable", .bool(on)) }

    /// Sets an `org.bluez.Adapter1` property on a connection of its own (a few calls per
    /// advertiser).
    private func setProperty(_ name: String, _ value: DBusValue) throws {
        do {
            _ = try DBusConnection(address: busAddress).call(
                BlueZObjects.service, adapterPath, "org.freedesktop.DBus.Properties", "Set",
                [.string("org.bluez.Adapter1"), .string(name), .variant(value)], timeoutMillis: 5000)
        } catch let f as DBusFailure {
            throw BlueZError.call("could not set \(name) = \(value) on \(adapterName) through bluetoothd (to make it reachable for unpaired peers): \(f)")
        }
    }

    private func getProperty(_ name: String) throws -> DBusValue? {
        do {
            return try DBusConnection(address: busAddress).call(
                BlueZObjects.service, adapterPath, "org.freedesktop.DBus.Properties", "Get",
                [.string("org.bluez.Adapter1"), .string(name)], timeoutMillis: 5000).first
        } catch let f as DBusFailure {
            throw BlueZError(f)
        }
    }
}
