import CAvahi
import PeerLink

/// Health check of the local Avahi setup (used by `peerlink doctor`).
public enum AvahiProbe {
    /// Connects to avahi-daemon through the D-Bus system bus at `busAddress` (nil: the
    /// process default) and returns the daemon's version string (e.g. "avahi 0.8"), or an
    /// ``AvahiError`` saying what is missing: no bus, no daemon, or another client error.
    public static func check(busAddress: String? = nil) -> Result<String, AvahiError> {
        guard let poll = avahi_simple_poll_new() else {
            return .failure(.client(code: -1, message: "cannot create an avahi poll object"))
        }
        defer { avahi_simple_poll_free(poll) }
        guard let api = avahi_simple_poll_get(poll) else {
            return .failure(.client(code: -1, message: "cannot get the avahi poll API"))
        }
        let result = avahiCreateClient(
            poll: api, flags: AvahiClientFlags(rawValue: 0), busAddress: busAddress,
            callback: { _, _, _ in }, userdata: nil)
        switch result {
        case let .failure(error):
            return .failure(error)
        case let .success(client):
            defer { avahi_client_free(client) }
            guard let version = avahi_client_get_version_string(client) else {
                let code = avahi_client_errno(client)
                return .failure(.client(code: code, message: avahiErrorString(code)))
            }
            return .success(String(cString: version))
        }
    }
}
