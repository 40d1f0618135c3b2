import PeerLink
import PeerLinkDBus
/// Asks NetworkManager (on the bus wpa_supplicant is on) whether it manages an interface.
enum NetworkManagerProbe {
    static let service = "org.freedesktop.NetworkManager"
    static let path = "/org/freedesktop/NetworkManager"
    static let deviceAPI = "org.freedesktop.NetworkManager.Device"

    /// Blocking; call from a dedicated queue.
    static func status(of interface: String, bus: WPASupplicantBus) -> NetworkManagerStatus {
        do {
            guard try bus.hasOwner(service) else { return .notRunning }
            let r: [DBusValue]
            do {
                r = try bus.call(path, service, "GetDeviceByIpIface", [.string(interface)], destination: service)
            } catch let e where WPASupplicantBus.errorName(e) == "org.freedesktop.NetworkManager.UnknownDevice" {
                return .unmanaged
            }
            guard let device = WPAProperties.text(r.first) else { return .unknown("GetDeviceByIpIface returned no path") }
            let props = try bus.getAll(device, deviceAPI, destination: service)
            return interpret(managed: props["Managed"]?.bool, state: WPAProperties.int(props["State"]))
        } catch {
            return .unknown("\(error)")
        }
    }

    /// Pure: NetworkManager's `Managed` and `State` properties to a status.
    static func interpret(managed: Bool?, state: Int?) -> NetworkManagerStatus {
        guard let managed else { return .unknown("the device has no Managed property") }
        return managed ? .managed(state: stateName(state)) : .unmanaged
    }

    /// NM_DEVICE_STATE_* names.
    static func stateName(_ s: Int?) -> String {
        switch s {
        case 10?: "unmanaged"
        case 20?: "unavailable"
        case 30?: "disconnected"
        case 40?: "prepare"
        case 50?: "config"
        case 60?: "need-auth"
        case 70?: "ip-config"
        case 80?: "ip-check"
        case 90?: "secondaries"
        case 100?: "activated"
        case 110?: "deactivating"
        case 120?: "failed"
        case let x?: "state \(x)"
        case nil: "unknown"
        }
    }
}
