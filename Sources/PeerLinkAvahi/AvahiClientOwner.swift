import CAvahi
import PeerLink

/// Shared machinery of AvahiPublisher and AvahiBrowser: Avahi's main loop on PeerLink's I/O
/// loop (`AvahiLoopPoll`), one client (created with AVAHI_CLIENT_NO_FAIL on the selected
/// bus), and reconnection when the daemon or the bus goes away.
///
/// Threading: every mutable field is touched either inside Avahi callbacks (which run with
/// the poll's lock held) or by other threads under that lock (`withPollLock`). Never call
/// `withPollLock` from inside an avahi callback.
class AvahiClientOwner: @unchecked Sendable {
    let busAddress: String?
    private var poll: AvahiLoopPoll?
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

    // MARK: Hooks for subclasses (inside Avahi callbacks, lock held)

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

    /// Creates the client on the I/O loop. Throws when the bus cannot be reached (a missing
    /// daemon is not an error: the owner waits for it).
    func start() throws {
        let poll = AvahiLoopPoll()
        self.poll = poll
        context = Unmanaged.passRetained(self).toOpaque()
        var failure: AvahiError?
        poll.withLock {
            if case let .failure(error) = createClient() { failure = error }
        }
        if let failure {
            stop()
            throw failure
        }
    }

    /// Runs `body` with the poll's lock held (not from inside an Avahi callback). Returns nil
    /// after `stop()`.
    func withPollLock<T>(_ body: () throws -> T) rethrows -> T? {
        stopLock.lock()
        defer { stopLock.unlock() }
        guard !stopRequested, let poll else { return nil }
        return try poll.withLock {
            guard !stopped else { return nil }
            return try body()
        }
    }

    /// Stops Avahi's callbacks, frees everything and finishes the event stream. Idempotent.
    func stop() {
        stopLock.lock()
        if stopRequested {
            stopLock.unlock()
            return
        }
        stopRequested = true
        stopLock.unlock()
        if let poll {
            poll.withLock {
                stopped = true
                poll.shutDown()  // no callback runs after this
                if let retryTimer { peerlink_avahi_timeout_free(poll.interface, retryTimer) }
                retryTimer = nil
                clientWillBeFreed()
                if let client { avahi_client_free(client) }
                client = nil
            }
            self.poll = nil
        }
        stopped = true
        finished()
        if let context {
            self.context = nil
            Unmanaged<AvahiClientOwner>.fromOpaque(context).release()
        }
    }

    // MARK: Client management (lock held)

    private func createClient() -> Result<OpaquePointer, AvahiError> {
        guard let poll else { return .failure(.stopped) }
        let result = avahiCreateClient(
            poll: poll.interface,
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
        guard !stopped, retryTimer == nil, let poll else { return }
        retryTimer = peerlink_avahi_timeout_new(poll.interface, retryDelayMs, { timeout, userdata in
            guard let userdata else { return }
            Unmanaged<AvahiClientOwner>.fromOpaque(userdata).takeUnretainedValue().reconnectNow(timeout)
        }, context)
    }

    private func reconnectNow(_ timeout: OpaquePointer?) {
        if let poll, let timeout { peerlink_avahi_timeout_free(poll.interface, timeout) }
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
