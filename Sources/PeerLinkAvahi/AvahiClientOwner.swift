import CAvahi
import PeerLink

/// Shared machinery of AvahiPublisher and AvahiBrowser: one avahi threaded poll, one client
/// (created with AVAHI_CLIENT_NO_FAIL on the selected bus), and reconnection when the daemon
/// or the bus goes away.
///
/// Threading: every mutable field is touched either on the poll thread (inside avahi
/// callbacks, which run with the poll lock held) or by other threads between
/// `avahi_threaded_poll_lock`/`unlock` (`withPollLock`). Never call `withPollLock` from
/// inside an avahi callback.
class AvahiClientOwner: @unchecked Sendable {
    let busAddress: String?
    private var poll: OpaquePointer?
    /// The current client; nil while none exists. Children (browsers, groups) belong to it.
    var client: OpaquePointer?
    /// Set once by `stop()`; checked by every callback.
    private(set) var stopped = false
    /// True after `daemonUnavailable` was reported and until the client is running again.
    private(set) var daemonDown = false
    private var context: UnsafeMutableRawPointer?
    private var retryTimer: OpaquePointer?
    private var retryDelayMs: UInt32 = 200
    private let stopLock = AvahiMutex()
    private var stopRequested = false

    init(busAddress: String?) {
        self.busAddress = busAddress
    }

    var shownBusAddress: String { busAddress ?? AvahiBusSelector.defaultAddress }

    /// Opaque pointer to `self` handed to avahi callbacks (valid until `stop()` completes).
    var callbackContext: UnsafeMutableRawPointer? { context }

    // MARK: Hooks for subclasses (poll thread, lock held)

    /// The client reached AVAHI_CLIENT_S_RUNNING.
    func clientRunning(_ client: OpaquePointer) {}
    /// The server is (re)registering its host name: entry groups must be reset.
    func clientRegistering(_ client: OpaquePointer) {}
    /// First report of the daemon/bus being unavailable.
    func daemonUnavailable(_ reason: String) {}
    /// The client is running again after `daemonUnavailable`.
    func daemonAvailableAgain() {}
    /// The client (and every object created on it) is about to be freed: drop pointers.
    func clientWillBeFreed() {}
    /// Called once at the end of `stop()`.
    func finished() {}

    // MARK: Life cycle

    /// Starts the poll thread and creates the client. Throws when the bus cannot be reached
    /// (a missing daemon is not an error: the owner waits for it).
    func start() throws {
        guard let poll = avahi_threaded_poll_new() else {
            throw AvahiError.client(code: -1, message: "cannot create avahi threaded poll")
        }
        self.poll = poll
        context = Unmanaged.passRetained(self).toOpaque()
        var failure: AvahiError?
        if avahi_threaded_poll_start(poll) < 0 {
            failure = .client(code: -1, message: "cannot start avahi poll thread")
        } else {
            avahi_threaded_poll_lock(poll)
            if case let .failure(error) = createClient() { failure = error }
            avahi_threaded_poll_unlock(poll)
        }
        if let failure {
            stop()
            throw failure
        }
    }

    /// Runs `body` with the poll lock held (from any thread except the poll thread).
    /// Returns nil after `stop()`.
    func withPollLock<T>(_ body: () throws -> T) rethrows -> T? {
        stopLock.lock()
        defer { stopLock.unlock() }
        guard !stopRequested, let poll else { return nil }
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        guard !stopped else { return nil }
        return try body()
    }

    /// Stops the poll thread, frees everything and finishes the event stream. Idempotent.
    func stop() {
        stopLock.lock()
        if stopRequested {
            stopLock.unlock()
            return
        }
        stopRequested = true
        stopLock.unlock()
        if let poll {
            avahi_threaded_poll_lock(poll)
            stopped = true
            avahi_threaded_poll_unlock(poll)
            avahi_threaded_poll_stop(poll)  // joins the poll thread (no-op if never started)
            if let retryTimer { peerlink_avahi_timeout_free(avahi_threaded_poll_get(poll), retryTimer) }
            retryTimer = nil
            clientWillBeFreed()
            if let client { avahi_client_free(client) }
            client = nil
            avahi_threaded_poll_free(poll)
            self.poll = nil
        }
        stopped = true
        finished()
        if let context {
            self.context = nil
            Unmanaged<AvahiClientOwner>.fromOpaque(context).release()
        }
    }

    // MARK: Client management (poll thread or lock held)

    private func createClient() -> Result<OpaquePointer, AvahiError> {
        guard let poll, let api = avahi_threaded_poll_get(poll) else { return .failure(.stopped) }
        let result = avahiCreateClient(
            poll: api,
            flags: AVAHI_CLIENT_NO_FAIL,
            busAddress: busAddress,
            callback: { client, state, userdata in
                guard let userdata else { return }
                Unmanaged<AvahiClientOwner>.fromOpaque(userdata).takeUnretainedValue().handleClientState(client, state)
            },
            userdata: context
        )
        switch result {
        case let .success(newClient):
            client = newClient
        case .failure:
            // The callback may have stored a pointer to the client that was freed again.
            clientWillBeFreed()
            client = nil
        }
        return result
    }

    private func handleClientState(_ newClient: OpaquePointer?, _ state: AvahiClientState) {
        guard !stopped, let newClient else { return }
        client = newClient  // may run before avahi_client_new returns
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            retryDelayMs = 200
            if daemonDown {
                daemonDown = false
                daemonAvailableAgain()
            }
            clientRunning(newClient)
        case AVAHI_CLIENT_S_REGISTERING, AVAHI_CLIENT_S_COLLISION:
            clientRegistering(newClient)
        case AVAHI_CLIENT_CONNECTING:
            reportDown("avahi-daemon is not running on the D-Bus system bus at \(shownBusAddress); waiting for it to start")
        case AVAHI_CLIENT_FAILURE:
            let code = avahi_client_errno(newClient)
            if code == peerlink_avahi_err_disconnected {
                reportDown("lost the connection to avahi-daemon on the D-Bus system bus at \(shownBusAddress) (the daemon or the bus stopped); reconnecting")
            } else {
                reportDown("avahi client failed: \(avahiErrorString(code)); reconnecting")
            }
            scheduleReconnect()
        default:
            break
        }
    }

    /// Reports the daemon unavailable (once until it is back).
    func reportDown(_ reason: String) {
        guard !daemonDown else { return }
        daemonDown = true
        daemonUnavailable(reason)
    }

    /// Frees the client and creates a new one after a short delay (exponential back-off up
    /// to 5 s while the bus is unreachable).
    func scheduleReconnect() {
        guard !stopped, retryTimer == nil, let poll, let api = avahi_threaded_poll_get(poll) else { return }
        retryTimer = peerlink_avahi_timeout_new(api, retryDelayMs, { timeout, userdata in
            guard let userdata else { return }
            Unmanaged<AvahiClientOwner>.fromOpaque(userdata).takeUnretainedValue().reconnectNow(timeout)
        }, context)
    }

    private func reconnectNow(_ timeout: OpaquePointer?) {
        if let poll, let timeout, let api = avahi_threaded_poll_get(poll) {
            peerlink_avahi_timeout_free(api, timeout)
        }
        retryTimer = nil
        guard !stopped else { return }
        clientWillBeFreed()
        if let client { avahi_client_free(client) }
        client = nil
        if case let .failure(error) = createClient() {
            reportDown(error.description)
            retryDelayMs = min(retryDelayMs * 2, 5000)
            scheduleReconnect()
        }
    }
}
