import Foundation
import Synchronization

/// Properties of an in-memory link, per direction.
public struct MemoryLinkConditions: Sendable, Equatable {
    /// Bytes per second; 0 means unlimited.
    public var bandwidth: Int = 0
    /// One-way delay.
    public var delay: Duration = .zero
    /// Probability (0…1) that a message is lost once; like TCP, it arrives after a
    /// retransmission penalty of `2 × delay + 0.2 s`, delaying everything behind it (losses
    /// during one recovery share it).
    public var loss: Double = 0
    /// Seed of the loss decisions, so a run can be repeated exactly.
    public var seed: UInt64 = 1
    /// The largest message the link carries (like an L2CAP MTU), nil for any size up to the
    /// protocol's. The link's hello asks for frames that fit; a larger message closes the
    /// connection, as a failed send would.
    public var maxMessage: Int?

    /// Conditions of a link; the defaults are an unlimited, instant, lossless link.
    public init(bandwidth: Int = 0, delay: Duration = .zero, loss: Double = 0, seed: UInt64 = 1, maxMessage: Int? = nil) {
        self.bandwidth = bandwidth; self.delay = delay; self.loss = loss; self.seed = seed; self.maxMessage = maxMessage
    }
}

/// A process-local network of named in-memory endpoints, for deterministic policy tests.
public final class MemoryNetwork: Sendable {
    private struct State {
        var listeners: [String: @Sendable (MessageConnection) -> Void] = [:]
        var pipes: [String: [MemoryConnection]] = [:]
        var conditions: [String: MemoryLinkConditions] = [:]
        var unreachable: Set<String> = []
    }
    private let state = Mutex(State())
    /// Conditions applied to new connections to an address.
    public var conditions: [String: MemoryLinkConditions] {
        get { state.withLock { $0.conditions } }
        set { state.withLock { $0.conditions = newValue } }
    }

    /// An empty network: no listeners, no conditions.
    public init() {}

    func register(_ address: String, _ handler: @escaping @Sendable (MessageConnection) -> Void) throws {
        try state.withLock { s in
            guard s.listeners[address] == nil else { throw TransportError.system(operation: "listen on memory address \(address)", errno: EADDRINUSE) }
            s.listeners[address] = handler
        }
    }

    func unregister(_ address: String) { state.withLock { _ = $0.listeners.removeValue(forKey: address) } }

    func connect(from: String, to address: String, medium: Medium = .memory) throws -> MessageConnection {
        let (handler, cond, down): ((@Sendable (MessageConnection) -> Void)?, MemoryLinkConditions, Bool) = state.withLock { s in
            (s.listeners[address], s.conditions[address] ?? MemoryLinkConditions(), s.unreachable.contains(address))
        }
        guard !down else { throw TransportError.system(operation: "connect to memory://\(address)", errno: EHOSTUNREACH) }
        guard let handler else { throw TransportError.system(operation: "connect to memory://\(address)", errno: ECONNREFUSED) }
        let ab = MemoryPipe(conditions: cond), ba = MemoryPipe(conditions: cond)
        let client = MemoryConnection(send: ab, receive: ba, remote: address, medium: medium, maxMessage: cond.maxMessage)
        let server = MemoryConnection(send: ba, receive: ab, remote: from, medium: medium, maxMessage: cond.maxMessage)
        state.withLock { $0.pipes[address, default: []].append(contentsOf: [client, server]) }
        handler(server)
        return client
    }

    /// The open connections to `address`, both ends (tests inspect what was sent).
    func connections(to address: String) -> [MemoryConnection] { state.withLock { $0.pipes[address] ?? [] } }

    /// Silently blackholes every connection to `address`: nothing more is delivered and
    /// nobody is told (like a radio going out of range). New connections to it fail until
    /// `restore(_:)`.
    public func cut(_ address: String) {
        for c in state.withLock({ s in s.unreachable.insert(address); return s.pipes[address] ?? [] }) { c.blackhole() }
    }

    /// Closes every connection to `address`, as when a radio is switched off. New connections
    /// to it fail until `restore(_:)`.
    public func drop(_ address: String) {
        for c in state.withLock({ s in s.unreachable.insert(address); return s.pipes.removeValue(forKey: address) ?? [] }) { c.close() }
    }

    /// Changes the conditions of `address`: for new connections and for the ones already open
    /// (messages already queued keep their timing).
    public func setConditions(_ c: MemoryLinkConditions, for address: String) {
        let open = state.withLock { s -> [MemoryConnection] in
            s.conditions[address] = c
            return s.pipes[address] ?? []
        }
        for conn in open { conn.setConditions(c) }
    }

    /// Makes `address` reachable again after `cut` or `drop` (the radio is back in range).
    public func restore(_ address: String) {
        state.withLock { _ = $0.unreachable.remove(address) }
    }
}

/// In-memory transport: addresses are plain names on a `MemoryNetwork`. It can stand in for
/// another medium (`emulating: .rfcomm`), so link-policy tests can build a "Bluetooth" and a
/// "Wi-Fi" link with exactly the properties they want.
public struct MemoryTransport: Transport {
    /// The medium its links report: `.memory`, or the one it emulates.
    public let medium: Medium
    /// The network its address is on.
    public let network: MemoryNetwork
    /// The name it listens on; `listen` ignores the port.
    public let address: String

    /// Makes a transport listening on `address` of `network`, reporting its links as `medium`.
    public init(network: MemoryNetwork, address: String, emulating medium: Medium = .memory) {
        self.network = network; self.address = address; self.medium = medium
    }

    public func listen(port: UInt16, onConnection: @escaping @Sendable (MessageConnection) -> Void) throws -> TransportListener {
        try network.register(address, onConnection)
        return MemoryListener(network: network, address: address)
    }

    public func connect(to endpoint: TransportEndpoint, timeout: Duration) async throws -> MessageConnection {
        try network.connect(from: address, to: endpoint.host, medium: medium)
    }
}

final class MemoryListener: TransportListener, @unchecked Sendable {
    let network: MemoryNetwork
    let address: String
    let port: UInt16 = 0
    init(network: MemoryNetwork, address: String) { self.network = network; self.address = address }
    func close() { network.unregister(address) }
}

/// One direction of an in-memory link: a timed queue.
final class MemoryPipe: @unchecked Sendable {
    private let lock = NSLock()
    private var queue: [(at: Double, message: [UInt8])] = []  // at: Runtime.seconds()
    private var waiter: CheckedContinuation<Void, Never>?
    private var closed = false
    private var blackholed = false
    private var lastDelivery = -Double.infinity
    /// Nothing is delivered before this (a retransmission in progress).
    private var holdUntil = -Double.infinity
    private var rng: UInt64
    private var conditions: MemoryLinkConditions

    init(conditions: MemoryLinkConditions) {
        self.conditions = conditions
        self.rng = conditions.seed | 1
    }

    private func random() -> Double {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17
        return Double(rng % 1_000_000) / 1_000_000
    }

    func push(_ message: [UInt8]) {
        let w: CheckedContinuation<Void, Never>? = lock.withLock {
            guard !closed, !blackholed else { return nil }
            // Serialisation at the link's bandwidth, then the one-way delay.
            var sent = max(Runtime.seconds(), lastDelivery)
            if conditions.bandwidth > 0 { sent += Double(message.count) / Double(conditions.bandwidth) }
            lastDelivery = sent
            let delay = conditions.delay.inSeconds
            var at = sent + delay
            // A lost message arrives after its retransmission; like TCP, everything behind it
            // waits for it (head-of-line), but losses during one recovery do not add up.
            if conditions.loss > 0, random() < conditions.loss { holdUntil = max(holdUntil, at + 2 * delay + 0.2) }
            at = max(at, holdUntil)
            queue.append((at, message))
            defer { waiter = nil }
            return waiter
        }
        w?.resume()
    }

    func pop() async -> [UInt8]? {
        while true {
            enum Next { case message([UInt8]), wait(Double?), end }
            let next: Next = lock.withLock {
                if closed && queue.isEmpty { return .end }
                guard let head = queue.first else { return .wait(nil) }
                if head.at <= Runtime.seconds() { queue.removeFirst(); return .message(head.message) }
                return .wait(head.at)
            }
            switch next {
            case let .message(m): return m
            case .end: return nil
            case let .wait(until?):
                try? await Runtime.sleep(nanoseconds: UInt64(max(0, until - Runtime.seconds()) * 1e9) + 1000)
            case .wait(nil):
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let resumeNow: Bool = lock.withLock {
                        if closed || !queue.isEmpty { return true }
                        waiter = c
                        return false
                    }
                    if resumeNow { c.resume() }
                }
            }
        }
    }

    func close() {
        let w: CheckedContinuation<Void, Never>? = lock.withLock { closed = true; defer { waiter = nil }; return waiter }
        w?.resume()
    }

    /// The sending end closes: the receiver reads the end after what is queued, unless the
    /// pipe is blackholed (a silent cut tells the far side nothing, a close included).
    func closeFromSender() {
        let silent = lock.withLock { blackholed }
        if !silent { close() }
    }

    func blackhole() { lock.withLock { blackholed = true; queue.removeAll() } }

    func setConditions(_ c: MemoryLinkConditions) { lock.withLock { conditions = c } }
}

/// One end of an in-memory link.
final class MemoryConnection: MessageConnection, @unchecked Sendable {
    let medium: Medium
    let remoteDescription: String
    private let out: MemoryPipe
    private let inbound: MemoryPipe
    private let maxMessage: Int?
    private let statsLock = NSLock()
    private var stats = (oversized: 0, largest: 0)
    /// Messages sent above `maxMessage` (each closed the connection), and the largest sent.
    var sendStats: (oversized: Int, largest: Int) { statsLock.withLock { stats } }

    init(send: MemoryPipe, receive: MemoryPipe, remote: String, medium: Medium, maxMessage: Int? = nil) {
        out = send; inbound = receive; remoteDescription = "memory://\(remote)"; self.medium = medium; self.maxMessage = maxMessage
    }

    /// What the hello asks the peer to send: whole Noise messages within `maxMessage`.
    var preferredMaxFrame: Int? { maxMessage.map { max(0, $0 - 16) } }

    func enqueue(_ message: [UInt8]) {
        let oversized = maxMessage.map { message.count > $0 } ?? false
        statsLock.withLock {
            stats.largest = max(stats.largest, message.count)
            if oversized { stats.oversized += 1 }
        }
        if oversized { close(); return }
        out.push(message)
    }
    var queuedBytes: Int { 0 }
    func flush() async {}
    func receive() async throws -> [UInt8]? { await inbound.pop() }
    func close() { out.closeFromSender(); inbound.close() }
    func blackhole() { out.blackhole(); inbound.blackhole() }
    func setConditions(_ c: MemoryLinkConditions) { out.setConditions(c); inbound.setConditions(c) }
}
