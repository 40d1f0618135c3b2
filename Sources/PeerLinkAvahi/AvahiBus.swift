import CAvahi
import PeerLink
#if canImport(Glibc)
import Glibc
#endif

// Selecting a D-Bus system bus per Avahi client
// ---------------------------------------------
// libavahi-client connects with `dbus_bus_get_private(DBUS_BUS_SYSTEM)`, and libdbus reads
// DBUS_SYSTEM_BUS_ADDRESS only the first time any code in the process asks for the system
// bus (the address is cached until dbus_shutdown()). Setting the variable around
// avahi_client_new therefore only works once per process (measured: a second client with a
// different address still reached the first bus). Test binaries therefore link a small C
// target (Tests/BusOverride) that exports its own `dbus_bus_get_private`, forwarding to
// `_peerlinkAvahiBusGetPrivateHook`; libavahi-client's call lands here. Production binaries
// do not interpose anything: there, `busAddress` is unavailable and the process's default
// system bus (DBUS_SYSTEM_BUS_ADDRESS) is used. While `AvahiBusSelector.withBus` runs
// avahi_client_new for an explicit address, that thread gets a private connection to that
// address; every other call (other threads, other libraries, no address given) goes to
// libdbus's real function (RTLD_NEXT) unchanged. If the override is not active in some
// executable, passing a busAddress fails with `AvahiError.busSelectionUnavailable` instead of
// silently using the wrong bus.

/// A plain pthread mutex (usable from C callbacks and any thread).
final class AvahiMutex: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

final class AvahiBusSelector: @unchecked Sendable {
    static let shared = AvahiBusSelector()

    /// Serialises client creation (one selection active at a time).
    private let creation = AvahiMutex()
    /// Guards the fields below (read by the interposer on any thread).
    private let state = AvahiMutex()
    private var owner: pthread_t?
    private var address: String?
    private var invoked = false
    private var failure: String?

    struct Outcome {
        var interposerInvoked: Bool
        var busFailure: String?
    }

    /// Runs `body` (which calls avahi_client_new) so that the bus connection it opens goes
    /// to `address` (nil: the process default).
    func withBus<T>(_ address: String?, _ body: () -> T) -> (T, Outcome) {
        creation.lock()
        defer { creation.unlock() }
        state.withLock {
            owner = pthread_self()
            self.address = address
            invoked = false
            failure = nil
        }
        let result = body()
        let outcome = state.withLock { () -> Outcome in
            let outcome = Outcome(interposerInvoked: invoked, busFailure: failure)
            owner = nil
            self.address = nil
            return outcome
        }
        return (result, outcome)
    }

    /// Called by the exported dbus_bus_get_private.
    func busGetPrivate(type: CInt, error: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
        let me = pthread_self()
        let selection: (active: Bool, address: String?) = state.withLock {
            guard let owner, pthread_equal(owner, me) != 0 else { return (false, nil) }
            invoked = true
            return (true, address)
        }
        let connection: UnsafeMutableRawPointer?
        if selection.active, type == 1 /* DBUS_BUS_SYSTEM */, let address = selection.address {
            connection = peerlink_dbus_open_private(address, error)
        } else {
            connection = peerlink_dbus_real_bus_get_private(type, error)
        }
        if selection.active, connection == nil {
            var detail = "connection failed"
            if let message = peerlink_dbus_error_message(error) { detail = String(cString: message) }
            state.withLock { failure = detail }
        }
        return connection
    }

    /// The address libdbus uses when none is given.
    static var defaultAddress: String {
        if let env = getenv("DBUS_SYSTEM_BUS_ADDRESS"), env.pointee != 0 { return String(cString: env) }
        return "unix:path=/var/run/dbus/system_bus_socket"
    }
}

/// Implementation of PeerLink's `dbus_bus_get_private` override (see the comment at the top
/// of this file; the exported symbol itself is defined in the CAvahi shim). Not for direct use.
@_cdecl("peerlink_avahi_bus_get_private_hook")
func _peerlinkAvahiBusGetPrivateHook(_ type: CInt, _ error: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    AvahiBusSelector.shared.busGetPrivate(type: type, error: error)
}

/// Creates an avahi client on `poll` talking to `busAddress`, mapping failures to AvahiError.
/// The callback may run (with the new client pointer) before this returns.
func avahiCreateClient(
    poll: UnsafePointer<AvahiPoll>,
    flags: AvahiClientFlags,
    busAddress: String?,
    callback: AvahiClientCallback,
    userdata: UnsafeMutableRawPointer?
) -> Result<OpaquePointer, AvahiError> {
    var code: Int32 = 0
    let (client, outcome) = AvahiBusSelector.shared.withBus(busAddress) {
        avahi_client_new(poll, flags, callback, userdata, &code)
    }
    let shownAddress = busAddress ?? AvahiBusSelector.defaultAddress
    if let busAddress, !outcome.interposerInvoked {
        if let client { avahi_client_free(client) }
        return .failure(.busSelectionUnavailable(address: busAddress))
    }
    guard let client else {
        if let busFailure = outcome.busFailure {
            return .failure(.noSystemBus(address: shownAddress, detail: busFailure))
        }
        if code == peerlink_avahi_err_no_daemon {
            return .failure(.daemonNotRunning(address: shownAddress))
        }
        return .failure(.client(code: code, message: avahiErrorString(code)))
    }
    return .success(client)
}
