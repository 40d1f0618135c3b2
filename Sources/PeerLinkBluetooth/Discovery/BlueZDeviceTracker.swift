import PeerLink
import PeerLinkDBus
import PeerLinkWire

/// A Bluetooth device that advertises a PeerLink service (docs/PROTOCOL.md §14.2), as read
/// from bluetoothd's `org.bluez.Device1` properties.
public struct BluetoothSighting: Equatable, Sendable {
    /// The device (controller) address, `AA:BB:CC:DD:EE:FF`.
    public let address: String
    /// What the device advertises: peer-ID prefix, RFCOMM channel, L2CAP PSM.
    package let advert: BluetoothAdvert
    /// Received signal strength in dBm, as bluetoothd last reported it; nil when it has none.
    public let rssi: Int16?

    /// Where to dial it: RFCOMM channel and/or L2CAP PSM at the device address.
    public var endpoints: [TransportEndpoint] {
        var out: [TransportEndpoint] = []
        if let c = advert.rfcommChannel { out.append(TransportEndpoint(medium: .rfcomm, host: address, port: UInt16(c))) }
        if let p = advert.l2capPSM { out.append(TransportEndpoint(medium: .l2cap, host: address, port: p)) }
        return out
    }
}

/// Turns the Device1 objects bluetoothd reports into found / updated / lost sightings for one
/// service UUID. Sans-I/O: the D-Bus edge feeds it property snapshots and removals.
struct BlueZDeviceTracker {
    enum Event: Equatable {
        case found(BluetoothSighting), updated(BluetoothSighting), lost(address: String)
        /// Service data that was present but malformed: reported, never trusted.
        case notice(String)
    }

    /// The service UUID in BlueZ's lowercase text form.
    let serviceUUID: String
    /// The protocol major version this node speaks; adverts of other versions are noticed and ignored.
    var majorVersion: UInt8 = 1
    private(set) var known: [String: BluetoothSighting] = [:]  // by object path
    private var noticed: [String: [UInt8]] = [:]

    init(serviceUUID: String) { self.serviceUUID = serviceUUID.lowercased() }

    /// Reads one device's full property set (after InterfacesAdded, PropertiesChanged merged
    /// by the caller, or GetManagedObjects) and reports what changed.
    mutating func device(at path: String, properties: [String: DBusValue]) -> [Event] {
        guard let address = properties["Address"]?.string,
              let data = Self.serviceData(properties["ServiceData"], uuid: serviceUUID) else {
            return removed(path)
        }
        let advert: BluetoothAdvert
        do {
            advert = try BluetoothAdvert.decode(data)
        } catch {
            guard noticed[path] != data else { return [] }
            let gone = removed(path)
            noticed[path] = data
            return gone + [.notice("ignored Bluetooth device \(address): \(error)")]
        }
        guard advert.version == majorVersion else {
            guard noticed[path] != data else { return [] }
            let gone = removed(path)
            noticed[path] = data
            return gone + [.notice("ignored Bluetooth device \(address): protocol version \(advert.version), this node speaks \(majorVersion)")]
        }
        noticed[path] = nil
        var rssi: Int16?
        if case let .int16(r)? = properties["RSSI"]?.unwrapped { rssi = r }
        let s = BluetoothSighting(address: address, advert: advert, rssi: rssi)
        let old = known.updateValue(s, forKey: path)
        if old == nil { return [.found(s)] }
        return old == s ? [] : [.updated(s)]
    }

    /// The device object disappeared (InterfacesRemoved) or stopped advertising the service.
    mutating func removed(_ path: String) -> [Event] {
        noticed[path] = nil
        guard let old = known.removeValue(forKey: path) else { return [] }
        return [.lost(address: old.address)]
    }

    /// Everything known is gone (adapter powered off or removed, bluetoothd left the bus).
    mutating func removeAll() -> [Event] {
        let events = known.values.sorted { $0.address < $1.address }.map { Event.lost(address: $0.address) }
        known = [:]
        noticed = [:]
        return events
    }

    /// The bytes under `uuid` in a Device1 `ServiceData` (`a{sv}` of UUID → `ay`).
    static func serviceData(_ value: DBusValue?, uuid: String) -> [UInt8]? {
        guard let value else { return nil }
        for (k, v) in value.dictionary where k.lowercased() == uuid {
            guard case let .array(items) = v.unwrapped else { return [] }
            return items.map { if case let .byte(b) = $0 { b } else { 0 } }
        }
        return nil
    }
}
