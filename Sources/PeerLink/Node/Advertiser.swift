import Foundation
import Synchronization
import PeerLinkCore
import PeerLinkWire

/// Makes a node discoverable for a service and hands its invitations to the application.
public final class Advertiser: Sendable {
    /// The node published and handed the invitations.
    public let node: Node
    /// The service the node is published under.
    public let service: ServiceType
    /// The discovery info published with the node, and told to peers in the hello.
    public let info: DiscoveryInfo
    /// The backends it publishes on (e.g. Avahi and BlueZ); none for a node that peers reach
    /// by an address they were given.
    public let discoveries: [Discovery]
    /// Invitations from peers; answer each with `accept(into:)` or `decline()`. Iterate it
    /// from one task: each invitation is handed out once (two loops would split them).
    public let invitations: AsyncStream<Invitation>
    /// Human-readable publication changes (renamed after a collision, daemon restarts, a
    /// backend that could not publish while others could).
    ///
    /// Several tasks may each iterate it: every iteration gets every notice from the moment
    /// it starts (the first one also the last 64 from before any iteration), and ends when
    /// the advertiser stops.
    public var notices: Notices { Notices(queue: noticeQueue) }
    private let invitationSink: AsyncStream<Invitation>.Continuation
    private let noticeQueue = EventBroadcast<String>(keepWithoutReader: 64)
    private let handles: [HandleBox]

    /// Makes an advertiser that publishes on one backend; nothing happens until `start()`.
    public convenience init(node: Node, service: ServiceType, info: DiscoveryInfo = DiscoveryInfo(), discovery: Discovery) {
        self.init(node: node, service: service, info: info, discoveries: [discovery])
    }

    /// Makes an advertiser that publishes nothing: the node listens and hands its invitations
    /// to the application, and peers dial it at an address they were given
    /// (``Node/invite(_:to:context:timeout:)`` with a ``PeerInfo`` naming the endpoint).
    public convenience init(node: Node, service: ServiceType, info: DiscoveryInfo = DiscoveryInfo()) {
        self.init(node: node, service: service, info: info, discoveries: [])
    }

    /// Makes an advertiser; nothing happens until `start()`.
    /// - Parameters:
    ///   - node: the node to publish; its invitations go to `invitations`.
    ///   - service: the service to publish it under.
    ///   - info: discovery info published with it and told to peers in the hello.
    ///   - discoveries: the backends to publish on; with none, the node is reachable only at
    ///     addresses its peers were given.
    public init(node: Node, service: ServiceType, info: DiscoveryInfo = DiscoveryInfo(), discoveries: [Discovery]) {
        self.node = node
        self.service = service
        self.info = info
        self.discoveries = discoveries
        self.handles = discoveries.map { _ in HandleBox() }
        (invitations, invitationSink) = AsyncStream.makeStream(of: Invitation.self, bufferingPolicy: .bufferingNewest(64))
    }

    /// Starts listening (if not yet), publishes on every backend, and starts delivering
    /// invitations. Throws when there were backends and none could publish; a backend that fails while another
    /// succeeded is reported on `notices`. Publishing (D-Bus round trips that may take
    /// seconds) runs on a thread of its own, never on the cooperative pool.
    public func start() async throws {
        let ports = try await node.start()
        guard !ports.isEmpty else {
            throw TransportError.unsupported("the node has no transport to listen on")
        }
        let ad = try Advertisement(peerID: node.peerID, displayName: node.displayName, info: info)
        let sink = invitationSink
        await node.setInvitationHandler { sink.yield($0) }
        await node.setAdvertisedInfo(info)
        let notices = noticeQueue
        var failures: [Error] = []
        let service = self.service
        for (index, discovery) in discoveries.enumerated() {
            let box = handles[index]
            do {
                try await Runtime.offload("pl.publish") {
                    box.set(try discovery.publish(ad, service: service, ports: ports) { notices.push($0) })
                }
            } catch {
                failures.append(error)
            }
        }
        if !failures.isEmpty, failures.count == discoveries.count, let first = failures.first {
            await node.setInvitationHandler(nil)
            await node.setAdvertisedInfo(nil)
            throw first
        }
        for f in failures { notices.push("not advertised on one medium: \(f)") }
    }

    /// Stops publishing (waiting for the backends' teardown on a thread of its own) and
    /// declining new invitations.
    public func stop() async {
        let running = handles.compactMap { $0.take() }
        if !running.isEmpty { await Runtime.offload("pl.unpublish") { for h in running { h.stop() } } }
        await node.setInvitationHandler(nil)
        await node.setAdvertisedInfo(nil)
        invitationSink.finish()
        noticeQueue.finish()
    }

    /// The advertiser's notices, for any number of loops (see ``Advertiser/notices``).
    public struct Notices: AsyncSequence, Sendable {
        public typealias Element = String
        let queue: EventBroadcast<String>

        /// One iteration's place in the notices; ends (returns nil) when the advertiser stops
        /// or the reading task is cancelled.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let reader: BroadcastReader<String>
            public mutating func next() async -> String? { await reader.next() }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reader: BroadcastReader(queue)) }
    }
}

/// Finds nearby nodes of a service and invites them. With several discovery backends (e.g.
/// Avahi and BlueZ), records carrying the same peer ID are merged into one peer whose
/// endpoints span every medium; a peer is lost only when every backend lost it.
public final class Browser: Sendable {
    /// The node that dials the peers found and sends the invitations.
    public let node: Node
    /// The service browsed for.
    public let service: ServiceType
    /// The backends browsed (e.g. Avahi and BlueZ), in the order given.
    public let discoveries: [Discovery]
    /// The first discovery backend.
    public var discovery: Discovery { discoveries[0] }
    /// Found, updated and lost peers (this node itself is never reported).
    ///
    /// Several tasks may each iterate it: every iteration first gets `.found` for each peer
    /// known at that moment (by peer ID), then every change after it, in order, and ends when
    /// the browser stops.
    public var events: Events { Events(queue: queue, records: records) }
    private let queue = EventBroadcast<DiscoveryEvent>(keepWithoutReader: 0)
    private let handles: [HandleBox]
    private let observers = ObserverList()
    private let records = RecordsBox()

    /// Makes a browser on one backend; nothing happens until `start()`.
    public convenience init(node: Node, service: ServiceType, discovery: Discovery) {
        self.init(node: node, service: service, discoveries: [discovery])
    }

    /// Makes a browser; nothing happens until `start()`.
    /// - Parameters:
    ///   - node: the node that dials the peers found; it is never reported itself.
    ///   - service: the service to browse for.
    ///   - discoveries: at least one backend; their records are merged by peer ID.
    public init(node: Node, service: ServiceType, discoveries: [Discovery]) {
        precondition(!discoveries.isEmpty, "a browser needs at least one discovery backend")
        self.node = node
        self.service = service
        self.discoveries = discoveries
        self.handles = discoveries.map { _ in HandleBox() }
    }

    /// Starts every backend; throws (and stops those already started) if one cannot browse.
    /// Starting (D-Bus round trips that may take seconds) runs on a thread of its own, never
    /// on the cooperative pool.
    public func start() async throws {
        let me = node.peerID
        let queue = self.queue
        let observers = self.observers
        let records = self.records
        let service = self.service, discoveries = self.discoveries, handles = self.handles
        try await Runtime.offload("pl.browse") {
            do {
                for (index, discovery) in discoveries.enumerated() {
                    handles[index].set(try discovery.browse(service) { e in
                        switch e {
                        case let .found(p) where p.peerID == me, let .updated(p) where p.peerID == me: return
                        case let .lost(p) where p == me: return
                        default:
                            records.apply(e, from: index) { merged in
                                queue.push(merged)
                                for o in observers.all() { o(merged) }
                            }
                        }
                    })
                }
            } catch {
                for h in handles { h.set(nil) }
                throw error
            }
        }
        if records.isStopped { stopBackends() }  // stop() ran while the backends started
    }

    /// Also delivers every event to `observer` (used by `Session.follow`); `events` still
    /// gets them all.
    func addObserver(_ observer: @escaping @Sendable (DiscoveryEvent) -> Void) { observers.add(observer) }

    /// Stops reporting at once (no event reaches `events` or an observer after it returns);
    /// the backends' teardown (D-Bus calls for Avahi) finishes on a thread of its own.
    public func stop() {
        records.stop()
        queue.finish()
        stopBackends()
    }

    private func stopBackends() {
        let running = handles.compactMap { $0.take() }
        if !running.isEmpty { Runtime.detach("pl.unbrowse") { for h in running { h.stop() } } }
    }

    /// `stop()`, returning once the backends' teardown is done.
    func stopAndWait() async {
        records.stop()
        queue.finish()
        let running = handles.compactMap { $0.take() }
        if !running.isEmpty { await Runtime.offload("pl.unbrowse") { for h in running { h.stop() } } }
    }

    /// Invites a found peer into `session` (see `Node.invite`).
    public func invite(_ peer: PeerInfo, to session: Session, context: [UInt8] = [], timeout: Duration = .seconds(30)) async throws {
        try await node.invite(peer, to: session, context: context, timeout: timeout)
    }

    /// The browser's events, for any number of loops (see ``Browser/events``).
    public struct Events: AsyncSequence, Sendable {
        public typealias Element = DiscoveryEvent
        let queue: EventBroadcast<DiscoveryEvent>
        let records: RecordsBox

        /// One iteration's place in the events: the peers known when it started, then the
        /// changes. Ends (returns nil) when the browser stops or the reading task is cancelled.
        public struct AsyncIterator: AsyncIteratorProtocol {
            var known: [DiscoveryEvent]
            let reader: BroadcastReader<DiscoveryEvent>
            public mutating func next() async -> DiscoveryEvent? {
                if !known.isEmpty { return known.removeFirst() }
                return await reader.next()
            }
        }

        public func makeAsyncIterator() -> AsyncIterator {
            let (known, reader) = records.subscribe(queue)
            return AsyncIterator(known: known.map { .found($0) }, reader: reader)
        }
    }
}

/// Holds the current discovery handle and stops the previous one when replaced.
final class HandleBox: Sendable {
    private let handle = Mutex<DiscoveryHandle?>(nil)
    /// Replaces the handle and stops the previous one (may block: call off the pool).
    func set(_ h: sending DiscoveryHandle?) {
        let old = handle.withLock { current -> sending DiscoveryHandle? in
            let previous = current
            current = h
            return previous
        }
        old?.stop()
    }
    /// Removes the handle without stopping it, for the caller to stop elsewhere.
    func take() -> DiscoveryHandle? {
        handle.withLock { current -> sending DiscoveryHandle? in
            let previous = current
            current = nil
            return previous
        }
    }
}

/// Callbacks registered on a browser.
final class ObserverList: Sendable {
    private let list = Mutex<[@Sendable (DiscoveryEvent) -> Void]>([])
    func add(_ o: @escaping @Sendable (DiscoveryEvent) -> Void) { list.withLock { $0.append(o) } }
    func all() -> [@Sendable (DiscoveryEvent) -> Void] { list.withLock { $0 } }
}

/// The browser's merged records, shared by the backends' callbacks.
final class RecordsBox: Sendable {
    private let state = Mutex<(records: PeerRecords, stopped: Bool)>((PeerRecords(), false))
    /// Applies a backend's event and reports the merged one, under the lock so that merged
    /// events keep their order. Nothing is reported after `stop()`.
    func apply(_ e: DiscoveryEvent, from source: Int, report: (DiscoveryEvent) -> Void) {
        state.withLock { s in if !s.stopped, let merged = s.records.apply(e, from: source) { report(merged) } }
    }
    func stop() { state.withLock { $0.stopped = true } }
    /// The peers known now (by peer ID) and a reader of what `queue` gets from now on, taken
    /// together under the lock so that no change falls between them; none after `stop()`.
    func subscribe(_ queue: EventBroadcast<DiscoveryEvent>) -> ([PeerInfo], BroadcastReader<DiscoveryEvent>) {
        state.withLock { s in
            (s.stopped ? [] : s.records.all.sorted { $0.peerID < $1.peerID }, BroadcastReader(queue, fromEnd: true))
        }
    }
    var isStopped: Bool { state.withLock { $0.stopped } }
}
