import CAvahi
import PeerLink

/// Browses one DNS-SD service type through avahi-daemon (libavahi-client over D-Bus), on
/// every interface, IPv4 and IPv6, and resolves every instance.
///
/// Results for the same service name from several interfaces/protocols are merged into one
/// ``ResolvedService``: `found` once, `updated` when the endpoints or TXT change, `lost`
/// when the last instance goes away. If avahi-daemon (or the bus) goes away the browser
/// reports `daemonUnavailable` followed by `lost` for every known service, and
/// `daemonAvailable` when browsing has restarted (services are then `found` again).
/// With a cut link mDNS reports nothing until the records expire: detecting peer loss is the
/// transport's job. `events` supports a single consumer; it finishes after `stop()`.
public final class AvahiBrowser: Sendable {
    private let core: AvahiBrowserCore
    /// Discovery events.
    public let events: AsyncStream<AvahiBrowseEvent>

    /// - Parameters:
    ///   - type: DNS-SD service type, e.g. "_field-demo._tcp".
    ///   - busAddress: D-Bus address of the system bus whose avahi-daemon to use; nil for
    ///     the process default.
    /// - Throws: ``AvahiError`` for an invalid type or an unreachable bus. A missing daemon
    ///   is reported as `daemonUnavailable` and browsing starts when it appears.
    public init(type: String, busAddress: String? = nil) throws {
        try avahiValidateType(type)
        let (stream, continuation) = AsyncStream.makeStream(of: AvahiBrowseEvent.self)
        events = stream
        core = AvahiBrowserCore(type: type, busAddress: busAddress, continuation: continuation)
        try core.start()
    }

    deinit {
        core.stop()
    }

    /// The services currently known (those reported `found` and not `lost`).
    public var services: [ResolvedService] {
        core.withPollLock { Array(core.services.values) } ?? []
    }

    /// Stops browsing and finishes `events`. Idempotent.
    public func stop() {
        core.stop()
    }
}

final class AvahiBrowserCore: AvahiClientOwner, @unchecked Sendable {
    private struct InstanceKey: Hashable {
        var name: String
        var interface: Int32
        var proto: Int32
        var domain: String
    }

    private final class Instance {
        var resolver: OpaquePointer?
        var endpoint: ServiceEndpoint?
        var txt: [String: String] = [:]
        var sequence: UInt64 = 0
    }

    let type: String
    private let continuation: AsyncStream<AvahiBrowseEvent>.Continuation
    private var browser: OpaquePointer?
    private var instances: [InstanceKey: Instance] = [:]
    private var sequence: UInt64 = 0
    /// Services reported to the consumer, by name.
    private(set) var services: [String: ResolvedService] = [:]

    init(type: String, busAddress: String?, continuation: AsyncStream<AvahiBrowseEvent>.Continuation) {
        self.type = type
        self.continuation = continuation
        super.init(busAddress: busAddress)
    }

    override func clientRunning(_ client: OpaquePointer) {
        guard browser == nil else { return }
        browser = avahi_service_browser_new(
            client, peerlink_avahi_if_unspec, peerlink_avahi_proto_unspec, type, nil, AvahiLookupFlags(rawValue: 0),
            { browser, interface, proto, event, name, type, domain, _, userdata in
                guard let userdata else { return }
                let owner = Unmanaged<AvahiClientOwner>.fromOpaque(userdata).takeUnretainedValue()
                (owner as? AvahiBrowserCore)?.browseEvent(browser, interface, proto, event, name, domain)
            }, callbackContext)
        if browser == nil {
            reportDown("cannot browse \(type): \(avahiErrorString(avahi_client_errno(client)))")
            scheduleReconnect()
        }
    }

    override func daemonUnavailable(_ reason: String) {
        continuation.yield(.daemonUnavailable(reason))
        for name in services.keys.sorted() {
            continuation.yield(.lost(name: name))
        }
        services = [:]
    }

    override func daemonAvailableAgain() {
        continuation.yield(.daemonAvailable)
    }

    override func clientWillBeFreed() {
        // Browser and resolvers are freed together with the client.
        browser = nil
        instances = [:]
    }

    override func finished() {
        continuation.finish()
    }

    fileprivate func browseEvent(
        _ source: OpaquePointer?, _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ event: AvahiBrowserEvent,
        _ namePtr: UnsafePointer<CChar>?, _ domainPtr: UnsafePointer<CChar>?
    ) {
        guard !stopped, let source, source == browser else { return }
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let client, let namePtr, let domainPtr else { return }
            let key = InstanceKey(name: String(cString: namePtr), interface: interface, proto: proto, domain: String(cString: domainPtr))
            guard instances[key] == nil else { return }
            let instance = Instance()
            instances[key] = instance
            instance.resolver = avahi_service_resolver_new(
                client, interface, proto, namePtr, type, domainPtr, peerlink_avahi_proto_unspec, AvahiLookupFlags(rawValue: 0),
                { resolver, interface, proto, event, name, _, domain, _, address, port, txt, _, userdata in
                    guard let userdata else { return }
                    let owner = Unmanaged<AvahiClientOwner>.fromOpaque(userdata).takeUnretainedValue()
                    (owner as? AvahiBrowserCore)?.resolveEvent(resolver, interface, proto, event, name, domain, address, port, txt)
                }, callbackContext)
        case AVAHI_BROWSER_REMOVE:
            guard let namePtr, let domainPtr else { return }
            let name = String(cString: namePtr)
            let key = InstanceKey(name: name, interface: interface, proto: proto, domain: String(cString: domainPtr))
            guard let instance = instances.removeValue(forKey: key) else { return }
            if let resolver = instance.resolver { avahi_service_resolver_free(resolver) }
            publish(name)
        case AVAHI_BROWSER_FAILURE:
            let code = client.map { avahi_client_errno($0) } ?? -1
            reportDown("browsing \(type) failed: \(avahiErrorString(code)); restarting")
            scheduleReconnect()
        default:
            break  // ALL_FOR_NOW, CACHE_EXHAUSTED
        }
    }

    fileprivate func resolveEvent(
        _ resolver: OpaquePointer?, _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ event: AvahiResolverEvent,
        _ namePtr: UnsafePointer<CChar>?, _ domainPtr: UnsafePointer<CChar>?, _ address: UnsafePointer<AvahiAddress>?,
        _ port: UInt16, _ txt: UnsafeMutablePointer<AvahiStringList>?
    ) {
        guard !stopped, let resolver, let namePtr, let domainPtr else { return }
        let name = String(cString: namePtr)
        let key = InstanceKey(name: name, interface: interface, proto: proto, domain: String(cString: domainPtr))
        guard let instance = instances[key], instance.resolver == resolver else { return }
        switch event {
        case AVAHI_RESOLVER_FOUND:
            guard let address, let host = Self.format(address) else { return }
            instance.endpoint = ServiceEndpoint(host: host, port: port, interfaceIndex: interface)
            instance.txt = AvahiTXT.parse(txt)
            sequence += 1
            instance.sequence = sequence
            publish(name)
        case AVAHI_RESOLVER_FAILURE:
            // The server-side resolver is gone; keep what was resolved before, if anything.
            instance.resolver = nil
            avahi_service_resolver_free(resolver)
        default:
            break
        }
    }

    /// Recomputes the merged view of `name` and emits found/updated/lost as needed.
    private func publish(_ name: String) {
        let matching = instances.filter { $0.key.name == name }.map(\.value).filter { $0.endpoint != nil }
        guard let newest = matching.max(by: { $0.sequence < $1.sequence }) else {
            if services.removeValue(forKey: name) != nil {
                continuation.yield(.lost(name: name))
            }
            return
        }
        let endpoints = Set(matching.compactMap(\.endpoint)).sorted(by: Self.endpointOrder)
        let service = ResolvedService(name: name, txt: newest.txt, endpoints: endpoints)
        guard let previous = services[name] else {
            services[name] = service
            continuation.yield(.found(service))
            return
        }
        if previous != service {
            services[name] = service
            continuation.yield(.updated(service))
        }
    }

    private static func endpointOrder(_ a: ServiceEndpoint, _ b: ServiceEndpoint) -> Bool {
        let aIsV6 = a.host.contains(":"), bIsV6 = b.host.contains(":")
        if aIsV6 != bIsV6 { return !aIsV6 }
        if a.host != b.host { return a.host < b.host }
        if a.port != b.port { return a.port < b.port }
        return a.interfaceIndex < b.interfaceIndex
    }

    private static func format(_ address: UnsafePointer<AvahiAddress>) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(peerlink_avahi_address_str_max) + 1)
        let count = buffer.count
        return buffer.withUnsafeMutableBufferPointer { raw -> String? in
            guard let base = raw.baseAddress, avahi_address_snprint(base, count, address) != nil else { return nil }
            return String(cString: base)
        }
    }
}
