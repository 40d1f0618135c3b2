import CAvahi
import PeerLink

/// Publishes one DNS-SD service through avahi-daemon (libavahi-client over D-Bus).
///
/// The service is announced on every interface the daemon uses, IPv4 and IPv6. Name
/// collisions are resolved with avahi's alternative names ("Name #2") and reported as
/// `renamed`. When avahi-daemon (or the bus) goes away the publisher reports
/// `daemonUnavailable`, waits, and registers again (`registered`) when it is back.
/// `events` supports a single consumer; it finishes after `stop()`.
public final class AvahiPublisher: Sendable {
    private let core: AvahiPublisherCore
    /// Registration progress and problems.
    public let events: AsyncStream<AvahiPublishEvent>

    /// - Parameters:
    ///   - type: DNS-SD service type, e.g. "_field-demo._tcp".
    ///   - name: instance name (at most 63 bytes of UTF-8).
    ///   - port: port the service listens on.
    ///   - txt: TXT record entries (each "key=value" at most 255 bytes).
    ///   - busAddress: D-Bus address of the system bus whose avahi-daemon to use
    ///     (e.g. "unix:path=/tmp/lab/pla/bus.sock"); nil for the process default.
    /// - Throws: ``AvahiError`` for invalid arguments or an unreachable bus. A bus without a
    ///   running avahi-daemon is not an error: the publisher reports `daemonUnavailable` and
    ///   registers once the daemon starts.
    public init(type: String, name: String, port: UInt16, txt: [String: String], busAddress: String? = nil) throws {
        try avahiValidateType(type)
        guard avahi_is_valid_service_name(name) != 0 else {
            throw AvahiError.invalidArgument("\"\(name)\" is not a valid DNS-SD instance name (1–63 bytes)")
        }
        try AvahiTXT.validate(txt)
        let (stream, continuation) = AsyncStream.makeStream(of: AvahiPublishEvent.self)
        events = stream
        core = AvahiPublisherCore(type: type, name: name, port: port, txt: txt, busAddress: busAddress, continuation: continuation)
        try core.start()
    }

    deinit {
        core.stop()
    }

    /// The name currently used (differs from the requested one after a collision).
    public var currentName: String {
        core.withPollLock { core.name } ?? core.lastName
    }

    /// Replaces the TXT record of the published service.
    public func updateTXT(_ txt: [String: String]) throws {
        try AvahiTXT.validate(txt)
        guard let result = core.withPollLock({ core.updateTXT(txt) }) else { throw AvahiError.stopped }
        if case let .failure(error) = result { throw error }
    }

    /// Withdraws the service (goodbye packets are sent) and finishes `events`. Idempotent.
    public func stop() {
        core.stop()
    }
}

final class AvahiPublisherCore: AvahiClientOwner, @unchecked Sendable {
    let type: String
    let port: UInt16
    var name: String
    var txt: [String: String]
    private var group: OpaquePointer?
    private let continuation: AsyncStream<AvahiPublishEvent>.Continuation
    /// Name as last known, readable after stop.
    private let lastNameLock = AvahiMutex()
    private var _lastName: String
    var lastName: String { lastNameLock.withLock { _lastName } }

    init(type: String, name: String, port: UInt16, txt: [String: String], busAddress: String?,
         continuation: AsyncStream<AvahiPublishEvent>.Continuation) {
        self.type = type
        self.name = name
        self.port = port
        self.txt = txt
        self.continuation = continuation
        _lastName = name
        super.init(busAddress: busAddress)
    }

    override func clientRunning(_ client: OpaquePointer) {
        register(on: client)
    }

    override func clientRegistering(_ client: OpaquePointer) {
        if let group { avahi_entry_group_reset(group) }
    }

    override func daemonUnavailable(_ reason: String) {
        continuation.yield(.daemonUnavailable(reason))
    }

    override func clientWillBeFreed() {
        group = nil  // freed together with the client
    }

    override func finished() {
        continuation.finish()
    }

    /// Adds the service to the (empty) entry group and commits it.
    private func register(on client: OpaquePointer) {
        guard avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING else { return }  // done on S_RUNNING
        if group == nil {
            group = avahi_entry_group_new(client, { group, state, userdata in
                guard let userdata else { return }
                Unmanaged<AvahiClientOwner>.fromOpaque(userdata).takeUnretainedValue()
                    .withPublisherCore { $0.groupChanged(group, state) }
            }, callbackContext)
        }
        guard let group else {
            continuation.yield(.failed("cannot create an avahi entry group: \(avahiErrorString(avahi_client_errno(client)))"))
            return
        }
        guard avahi_entry_group_is_empty(group) != 0 else { return }
        for _ in 0..<20 {
            let list = AvahiTXT.makeList(txt)
            let code = avahi_entry_group_add_service_strlst(
                group, peerlink_avahi_if_unspec, peerlink_avahi_proto_unspec, AvahiPublishFlags(rawValue: 0),
                name, type, nil, nil, port, list)
            avahi_string_list_free(list)
            if code == peerlink_avahi_err_collision {
                rename()  // a local service already has this name
                continue
            }
            if code < 0 {
                continuation.yield(.failed("cannot add service \"\(name)\": \(avahiErrorString(code))"))
                avahi_entry_group_reset(group)
                return
            }
            let commit = avahi_entry_group_commit(group)
            if commit < 0 {
                continuation.yield(.failed("cannot commit service \"\(name)\": \(avahiErrorString(commit))"))
            }
            return
        }
        continuation.yield(.failed("no free service name found after 20 attempts (last tried \"\(name)\")"))
    }

    private func rename() {
        guard let alternative = avahi_alternative_service_name(name) else { return }
        let newName = String(cString: alternative)
        avahi_free(alternative)
        let old = name
        name = newName
        lastNameLock.withLock { _lastName = newName }
        continuation.yield(.renamed(from: old, to: newName))
    }

    fileprivate func groupChanged(_ changed: OpaquePointer?, _ state: AvahiEntryGroupState) {
        guard !stopped, let changed, changed == group else { return }
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            continuation.yield(.registered(name: name))
        case AVAHI_ENTRY_GROUP_COLLISION:
            rename()
            avahi_entry_group_reset(changed)
            if let client { register(on: client) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            let code = avahi_client_errno(avahi_entry_group_get_client(changed))
            continuation.yield(.failed("registering \"\(name)\" failed: \(avahiErrorString(code))"))
        default:
            break
        }
    }

    /// Lock held by the caller.
    func updateTXT(_ newTXT: [String: String]) -> Result<Void, AvahiError> {
        txt = newTXT
        guard let group, avahi_entry_group_is_empty(group) == 0 else {
            return .success(())  // not registered right now: the new TXT is used when it is
        }
        let list = AvahiTXT.makeList(newTXT)
        let code = avahi_entry_group_update_service_txt_strlst(
            group, peerlink_avahi_if_unspec, peerlink_avahi_proto_unspec, AvahiPublishFlags(rawValue: 0),
            name, type, nil, list)
        avahi_string_list_free(list)
        if code < 0 {
            // Fall back to re-registering with the new record.
            avahi_entry_group_reset(group)
            if let client { register(on: client) }
        }
        return .success(())
    }
}

extension AvahiClientOwner {
    fileprivate func withPublisherCore(_ body: (AvahiPublisherCore) -> Void) {
        if let core = self as? AvahiPublisherCore { body(core) }
    }
}
