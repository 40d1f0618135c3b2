import Foundation
import PeerLink
import PeerLinkDBus

/// A BR/EDR dial that times out while bluetoothd still lists the remote as connected went over
/// an ACL that nothing answers: the remote vanished (powered off, out of range) and the local
/// controller has not noticed yet. A real controller drops such a link only at the supervision
/// timeout (20 s by default), and every dial until then hangs on it instead of paging. The
/// dialer asks bluetoothd (`org.bluez.Device1.Disconnect`) to drop it, so that the next attempt
/// pages afresh. Only a dial that already failed does this, and only for a device that did not
/// answer it: a live remote refuses or accepts a connection, it does not time out.
enum StaleACL {
    /// Disconnects `remote` ("AA:BB:CC:DD:EE:FF") wherever bluetoothd lists it as connected,
    /// only on the adapter with address `localAdapter` when one is given. Returns the D-Bus
    /// paths of the devices dropped; empty when none was connected or bluetoothd could not be
    /// asked (the dial's own error says enough then). `busAddress` nil is the system bus.
    static func drop(remote: String, localAdapter: String?, busAddress: String? = nil) -> [String] {
        // A link that still carries one of this process's connections is alive, or all of
        // them are dead too and will end on their own: it is not dropped from under them.
        guard openConnections(to: remote) == 0 else { return [] }
        guard let bus = try? DBusConnection(address: busAddress),
              let objects = try? BlueZObjects.managedObjects(bus) else { return [] }
        let adapterAddress: [String: String] = objects.compactMapValues { $0["org.bluez.Adapter1"]?["Address"]?.string?.uppercased() }
        var dropped: [String] = []
        for (path, interfaces) in objects.sorted(by: { $0.key < $1.key }) {
            guard let device = interfaces["org.bluez.Device1"],
                  device["Address"]?.string?.uppercased() == remote.uppercased(),
                  device["Connected"]?.bool == true else { continue }
            if let localAdapter {
                guard let adapter = device["Adapter"]?.string,
                      adapterAddress[adapter] == localAdapter.uppercased() else { continue }
            }
            // Disconnect answers once the link is down; a controller that never confirms gets
            // the call's own time limit, not the dialer's.
            if (try? bus.call(BlueZObjects.service, path, "org.bluez.Device1", "Disconnect", timeoutMillis: 5000)) != nil {
                dropped.append(path)
            }
        }
        return dropped
    }

    /// `error` with what was done about a stale link when it is a dial timeout and one was
    /// dropped; otherwise `error` itself.
    static func afterTimeout(_ error: Error, remote: String, localAdapter: String?, busAddress: String? = nil) -> Error {
        guard case let TransportError.timedOut(operation, limit) = error else { return error }
        let dropped = drop(remote: remote, localAdapter: localAdapter, busAddress: busAddress)
        guard !dropped.isEmpty else { return error }
        return TransportError.timedOut(
            operation: operation + " (bluetoothd still listed \(remote) as connected: PeerLink asked it to drop that link, "
                + "so the next attempt pages the device afresh)",
            after: limit)
    }

    // MARK: this process's BR/EDR connections

    private static let lock = NSLock()
    nonisolated(unsafe) private static var open: [String: Int] = [:]  // under lock
    nonisolated(unsafe) private static var lastClosed: [String: Double] = [:]  // under lock: system uptime

    /// Whether this process has a connection to `remote` open, or had one that closed less
    /// than `seconds` ago: the remote may still be winding a link with this device down.
    static func connectedRecently(_ remote: String, within seconds: Double) -> Bool {
        let now = ProcessInfo.processInfo.systemUptime
        return lock.withLock {
            if open[remote.uppercased()] != nil { return true }
            guard let at = lastClosed[remote.uppercased()] else { return false }
            return now - at < seconds
        }
    }

    /// Counts one open connection to `remote` for as long as the returned object lives (a
    /// connection holds it).
    static func register(remote: String) -> Registration { Registration(remote.uppercased()) }

    /// Open connections of this process to `remote`.
    static func openConnections(to remote: String) -> Int { lock.withLock { open[remote.uppercased(), default: 0] } }

    /// One open connection to a remote address, counted until released.
    final class Registration: Sendable {
        let remote: String
        fileprivate init(_ remote: String) {
            self.remote = remote
            StaleACL.lock.withLock { StaleACL.open[remote, default: 0] += 1 }
        }
        deinit {
            let remote = self.remote
            let now = ProcessInfo.processInfo.systemUptime
            StaleACL.lock.withLock {
                let n = StaleACL.open[remote, default: 1] - 1
                StaleACL.open[remote] = n > 0 ? n : nil
                if n <= 0 { StaleACL.lastClosed[remote] = now }
            }
        }
    }
}
