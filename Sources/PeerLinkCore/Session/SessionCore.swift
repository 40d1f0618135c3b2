import PeerLinkWire

/// The session protocol with one remote peer, as a state machine without I/O.
///
/// Feed it link changes, received frames, application requests and the time; collect
/// `takeOutputs()` afterwards and carry them out (transmit frames, deliver events).
/// Reliable records carry end-to-end sequence numbers and stay buffered until acknowledged,
/// so when the carrying link dies they are resent on the next one: the receiver drops
/// duplicates and restores order, and gets each record exactly once.
package struct SessionCore: Sendable {
    package enum Role: Sendable { case initiator, responder }

    package let config: SessionConfig
    package let role: Role
    /// Unanswered pings remembered per link, so a slow pong still measures the RTT.
    static let maxOutstandingPings = 8
    /// The suspicion bound grows at most this much after false alarms, and forgets one of
    /// them after `falseAlarmMemory` ms without another.
    static let maxSuspectBackoff: UInt64 = 4
    static let falseAlarmMemory: UInt64 = 30_000
    /// Acknowledged bytes a quarter second must carry before it may raise a link's capacity
    /// estimate early (slow links, a few frames a second, keep the once-a-second estimate).
    static let rampBytes = 256 * 1024
    package private(set) var isClosed = false

    // MARK: links
    struct LinkState: Sendable {
        var lastReceived: UInt64
        /// When the link last proved that what this side sends on it arrives: a PONG to one of
        /// its PINGs, or an acknowledgement of records it carried. A peer that keeps talking
        /// on a link whose other direction is stuck refreshes `lastReceived`, not this.
        var lastProgress: UInt64
        var lastSent: UInt64
        let upAt: UInt64
        /// When this side last sent a PING on the link.
        var lastPing: UInt64
        /// Tokens (send times) of unanswered pings, oldest first, at most `maxOutstandingPings`.
        var outstandingPings: [UInt64] = []
        var rtt: UInt64?
        /// Smoothed round-trip time and its mean deviation (RFC 6298 style), in ms.
        var srtt: Double?
        var rttvar: Double = 0
        /// Outcomes of recent keepalive probes (true = lost), newest last.
        var probeOutcomes: [Bool] = []
        /// Pings already counted as lost (still matched if a late pong comes).
        var countedLost: Set<UInt64> = []
        /// Capacity estimate in bytes per second, from acknowledged bytes while it carried.
        var throughput: Double?
        var rateWindowStart: UInt64
        var rateWindowBytes = 0
        var saturated = false
        /// Records in flight and no progress (silent, or its PINGs unanswered while the peer
        /// still talks): lanes avoid it until it answers a PING again.
        var suspect = false
        /// When the current suspicion began, and the bound it was judged against.
        var suspectedAt: UInt64 = 0
        var suspectedBound: UInt64 = 0
        /// Multiplies the suspicion bound after false alarms (a suspected link that answered
        /// again within one more bound, as a link whose own retransmissions stall it does);
        /// 1, 2 or 4; halves after `falseAlarmMemory` without another.
        var suspectBackoff: UInt64 = 1
        var lastFalseAlarm: UInt64 = 0
    }
    private var links: [LinkID: LinkState] = [:]
    private var linkOrder: [LinkID] = []
    /// The latest time any call gave: what records sent by a change without a time of its
    /// own (a carrier chosen by policy, a link gone) are stamped with.
    private var latestNow: UInt64 = 0
    /// While true, received reliable records are not acknowledged, so the sender stops once its
    /// window is full: set it while the application is behind on consuming events (flow
    /// control end to end). Frames are still read, so keepalives keep working.
    package var acknowledgementsPaused = false

    /// The link chosen by policy to carry messages and control records (the main lane); when
    /// nil, dead or suspected, the oldest healthy live link.
    package var preferredLink: LinkID? { didSet { flush() } }
    /// The link chosen by policy for stream and resource bytes (the bulk lane); nil follows
    /// the main lane.
    package var preferredBulkLink: LinkID? { didSet { flush() } }
    /// The link chosen for unreliable messages; nil follows the main lane.
    package var preferredUnreliableLink: LinkID?
    /// A second link chosen by policy to get a copy of every main-lane frame (reliable
    /// messages and control records), so that a carrier failing silently costs no delivery
    /// delay: the receiver keeps whichever copy comes first. Nil sends no copies.
    package var preferredCopyLink: LinkID?
    /// Main-lane bytes per second that may be copied (a token bucket one second deep); 0
    /// sends no copies.
    package var copyBytesPerSecond: Double
    private var copyTokens = 0.0
    private var copyRefilledAt: UInt64 = 0

    // MARK: reliable lanes
    private var mainLane = ReliableLane(.main)
    private var bulkLane = ReliableLane(.bulk)
    private func lane(_ l: Lane) -> ReliableLane { l == .main ? mainLane : bulkLane }
    /// Mutates one lane in place (no copy of its outbox).
    private mutating func modify<R>(_ l: Lane, _ body: (inout ReliableLane) -> R) -> R {
        l == .main ? body(&mainLane) : body(&bulkLane)
    }
    private var remoteMaxFrame = WireLimits.frame
    /// The protocol minor version both sides speak (the smaller of the two hellos'); records
    /// of a later minor are never sent.
    package var sharedMinor: UInt8 = 0
    /// Fragments of the message being received, joined once when its last one arrives.
    private var reassembly: [ArraySlice<UInt8>] = []
    private var reassemblyBytes = 0

    // MARK: streams
    enum InboundKind: Sendable { case stream, resource(accepted: Bool) }
    struct Inbound: Sendable {
        var kind: InboundKind
        var creditLeft: Int
        var consumedSinceGrant: Int
        /// Credit the writer may hold at once: `streamWindow` at first, doubled (up to
        /// `maxStreamWindow`) while it rather than the reader limits the stream (`consumed`).
        var window: Int
        /// When credit was last granted, and the link the stream's latest bytes came on.
        var lastGrant: UInt64
        var link: LinkID?
    }
    private var inbound: [UInt32: Inbound] = [:]
    private var outboundCredit: [UInt32: Int] = [:]
    /// Outgoing resources, from the offer until the receiver's verdict (RESOURCE_RESULT, or
    /// its cancel): after the sender's own close the receiver can still refuse the bytes.
    private var outgoingResources: Set<UInt32> = []
    private var nextStreamID: UInt32

    private var outputs: [SessionOutput] = []
    /// When each lane's oldest unacknowledged received frame must be acknowledged by.
    private var ackDue: [Lane: UInt64] = [:]

    package init(role: Role, config: SessionConfig = SessionConfig()) {
        self.role = role
        self.config = config
        self.nextStreamID = role == .initiator ? 1 : 2
        self.copyBytesPerSecond = Double(config.messageCopyBytesPerSecond)
    }

    /// Everything produced since the last call, in order.
    package mutating func takeOutputs() -> [SessionOutput] {
        defer { outputs.removeAll(keepingCapacity: true) }
        return outputs
    }

    // MARK: - Links

    /// The live links, oldest first.
    package var liveLinks: [LinkID] { linkOrder }
    /// The link carrying the main lane (messages, control) now, if any.
    package var activeLink: LinkID? { carrier(of: .main) }
    /// The link that carries `lane` now: its preferred link when that is up and not suspected,
    /// otherwise the oldest healthy link, otherwise any live link.
    package func carrier(of lane: Lane) -> LinkID? {
        let preferred = lane == .main ? preferredLink : (preferredBulkLink ?? preferredLink)
        if let p = preferred, let s = links[p], !s.suspect { return p }
        if let healthy = linkOrder.first(where: { links[$0]?.suspect == false }) { return healthy }
        if let p = preferred, links[p] != nil { return p }
        return linkOrder.first
    }
    /// The link for unreliable messages now.
    package var unreliableLink: LinkID? {
        if let p = preferredUnreliableLink, let s = links[p], !s.suspect { return p }
        return activeLink
    }
    /// The link that gets copies of main-lane frames now: the preferred copy link while it is
    /// live, not suspected and not itself the carrier.
    package var copyLink: LinkID? {
        guard copyBytesPerSecond > 0, let c = preferredCopyLink, let s = links[c], !s.suspect,
              c != carrier(of: .main) else { return nil }
        return c
    }
    /// Last measured round-trip time of a link.
    package func roundTrip(of link: LinkID) -> UInt64? { links[link]?.rtt }
    /// Measurements of a live link for the link policy and `peerlink links`.
    package func stats(of link: LinkID, now: UInt64) -> LinkStats? {
        guard let s = links[link] else { return nil }
        let lost = s.probeOutcomes.filter { $0 }.count
        return LinkStats(age: now >= s.upAt ? now - s.upAt : 0, rttMillis: s.rtt,
                         loss: s.probeOutcomes.isEmpty ? 0 : Double(lost) / Double(s.probeOutcomes.count),
                         throughput: s.throughput, suspect: s.suspect,
                         silentMillis: now >= s.lastReceived ? now - s.lastReceived : 0)
    }
    /// Reliable bytes not yet acknowledged (sent or queued), over both lanes.
    package var unacknowledgedBytes: Int { mainLane.outboxBytes + bulkLane.outboxBytes }
    /// Nothing to send, resend or acknowledge and no link under suspicion: until the next
    /// keepalive is due, `tick` has nothing to do, so the edge may call it less often (an idle
    /// peer then costs a few wake-ups a second, not one per `suspectAfter / 4`).
    package var isQuiet: Bool {
        !isClosed && mainLane.outboxBytes == 0 && bulkLane.outboxBytes == 0
            && mainLane.receivedSinceAck == 0 && bulkLane.receivedSinceAck == 0
            && !links.values.contains { $0.suspect }
    }
    /// Message bytes queued behind the main lane's window.
    package var backlogBytes: Int { mainLane.backlogBytes }
    /// Stream and resource bytes queued behind the bulk lane's window.
    package var bulkBacklogBytes: Int { bulkLane.backlogBytes }

    /// A link's hello said the remote accepts frames up to `n` bytes on it. The session keeps
    /// the smallest size any link announced, so that fragments made from now on fit every
    /// link a lane may move to (an L2CAP link announces less than a TCP one).
    package mutating func setRemoteMaxFrame(_ n: Int) {
        remoteMaxFrame = min(remoteMaxFrame, max(1024, min(n, WireLimits.frame)))
    }

    /// The largest frame this session sends (the smallest any link of the peer announced).
    package var maxFrame: Int { remoteMaxFrame }

    /// Every link of the session is fast (the edge says so from the links' media): messages,
    /// streams and resources queued from now on are cut into `config.fastFragmentSize` pieces
    /// instead of `config.fragmentSize`. What is already queued keeps its fragments.
    package var fastLinksOnly = false

    /// The link chosen for the bulk lane is fast (a Wi-Fi Direct group beside a Bluetooth
    /// link): stream and resource bytes queued from now on are cut into
    /// `config.fastFragmentSize` pieces even while a slow link carries the messages.
    package var fastBulkCarrier = false

    package mutating func linkUp(_ link: LinkID, now: UInt64) {
        guard links[link] == nil, !isClosed else { return }
        links[link] = LinkState(lastReceived: now, lastProgress: now, lastSent: now, upAt: now, lastPing: now, rateWindowStart: now)
        linkOrder.append(link)
        flush(now: now)
    }

    /// The link is gone (closed, failed, or declared dead). In-flight records move to the next link.
    package mutating func linkDown(_ link: LinkID) {
        guard links.removeValue(forKey: link) != nil else { return }
        linkOrder.removeAll { $0 == link }
        if preferredLink == link { preferredLink = nil }
        if preferredBulkLink == link { preferredBulkLink = nil }
        if preferredUnreliableLink == link { preferredUnreliableLink = nil }
        if preferredCopyLink == link { preferredCopyLink = nil }
        // A link that comes back under the same name is a new carrier: resend on it.
        for l in Lane.allCases where lane(l).carryingLink == link { modify(l) { $0.carryingLink = nil } }
        flush()
    }

    // MARK: - Application requests

    /// Queues an application message. Reliable messages are fragmented and delivered exactly
    /// once in order; unreliable ones go out now on the active link or not at all.
    package mutating func send(_ message: [UInt8], reliable: Bool, now: UInt64) throws {
        guard !isClosed else { throw SessionError.closed }
        if !reliable {
            let limit = remoteMaxFrame - 1
            guard message.count <= limit else { throw SessionError.messageTooLarge(size: message.count, limit: limit) }
            guard let link = unreliableLink else { throw SessionError.noLink }
            transmit(.unreliable(payload: message), on: link, now: now)
            return
        }
        guard message.count <= config.maxMessageSize else {
            throw SessionError.messageTooLarge(size: message.count, limit: config.maxMessageSize)
        }
        try checkBacklog()
        let piece = fragmentSize
        // Fragments are slices of the message: nothing is copied until the link seals them.
        var offset = 0
        repeat {
            let end = min(offset + piece, message.count)
            enqueue(.messagePart(final: end == message.count, bytes: message[offset..<end]))
            offset = end
        } while offset < message.count
        flush(now: now)
    }

    /// Opens an outgoing byte stream; bytes may be written once the remote grants credit.
    package mutating func openStream(name: String, now: UInt64) throws -> UInt32 {
        guard !isClosed else { throw SessionError.closed }
        guard name.utf8.count <= WireLimits.name else {
            throw SessionError.messageTooLarge(size: name.utf8.count, limit: WireLimits.name)
        }
        let id = allocateStreamID()
        outboundCredit[id] = 0
        enqueue(.streamOpen(stream: id, name: name))
        flush(now: now)
        return id
    }

    /// Offers a resource; data may be written after `resourceAccepted`.
    package mutating func offerResource(name: String, size: UInt64, sha256: [UInt8], now: UInt64) throws -> UInt32 {
        guard !isClosed else { throw SessionError.closed }
        guard name.utf8.count <= WireLimits.name, sha256.count == 32 else {
            throw SessionError.messageTooLarge(size: name.utf8.count, limit: WireLimits.name)
        }
        return startResource(now: now) { .resourceOffer(stream: $0, size: size, sha256: sha256, name: name) }
    }

    /// Opens an outgoing resource's stream (no credit until the peer accepts) and sends its
    /// offer, made for the new stream ID.
    private mutating func startResource(now: UInt64, _ offer: (UInt32) -> Record) -> UInt32 {
        let id = allocateStreamID()
        outboundCredit[id] = 0
        outgoingResources.insert(id)
        enqueue(offer(id))
        flush(now: now)
        return id
    }

    /// Offers a resource whose SHA-256 follows its last byte (`sendResourceDigest`), so the
    /// bytes can start before the sender has read the whole file. `key` (32 bytes) names the
    /// content for the receiver's partial file. Throws `SessionError.unsupportedByPeer` when
    /// the remote predates protocol minor 4: offer with the digest instead.
    package mutating func offerResource(name: String, size: UInt64, key: [UInt8], now: UInt64) throws -> UInt32 {
        guard !isClosed else { throw SessionError.closed }
        guard sharedMinor >= 4 else { throw SessionError.unsupportedByPeer("an offer whose digest follows (protocol minor 4)") }
        guard name.utf8.count <= WireLimits.name, key.count == 32 else {
            throw SessionError.messageTooLarge(size: name.utf8.count, limit: WireLimits.name)
        }
        return startResource(now: now) { .resourceOfferKeyed(stream: $0, size: size, key: key, name: name) }
    }

    /// Sends the SHA-256 of a keyed resource's whole content, after its last byte and before
    /// its close (on the lane of its bytes, so it follows them).
    package mutating func sendResourceDigest(_ stream: UInt32, sha256: [UInt8], now: UInt64) throws {
        guard !isClosed else { throw SessionError.closed }
        guard outboundCredit[stream] != nil, outgoingResources.contains(stream) else { throw SessionError.unknownStream(stream) }
        guard sha256.count == 32 else { throw SessionError.messageTooLarge(size: sha256.count, limit: 32) }
        enqueue(.resourceDigest(stream: stream, sha256: sha256))
        flush(now: now)
    }

    /// Bytes that may be written on an outgoing stream now.
    package func credit(of stream: UInt32) -> Int? { outboundCredit[stream] }

    /// Writes stream or resource bytes, at most the stream's credit.
    package mutating func write(_ bytes: [UInt8], to stream: UInt32, now: UInt64) throws {
        try write(bytes[...], to: stream, now: now)
    }

    /// Writes a slice of a larger buffer (a chunk read ahead from a file): fragments are slices
    /// of it (the buffer lives until the last is acknowledged), copied only when sealed.
    package mutating func write(_ bytes: ArraySlice<UInt8>, to stream: UInt32, now: UInt64) throws {
        guard !isClosed else { throw SessionError.closed }
        guard let credit = outboundCredit[stream] else { throw SessionError.unknownStream(stream) }
        guard bytes.count <= credit else { throw SessionError.noCredit(stream: stream, available: credit) }
        outboundCredit[stream] = credit - bytes.count
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let end = min(offset + bulkFragmentSize, bytes.endIndex)
            enqueue(.streamData(stream: stream, bytes: bytes[offset..<end]))
            offset = end
        }
        flush(now: now)
    }

    /// Ends an outgoing stream normally, or cancels a stream in either direction.
    package mutating func close(stream: UInt32, cancel: Bool, now: UInt64) {
        if outboundCredit.removeValue(forKey: stream) != nil {
            if cancel { outgoingResources.remove(stream) }
            enqueue(.streamClose(stream: stream, status: cancel ? .cancelledBySender : .finished))
        } else if inbound.removeValue(forKey: stream) != nil {
            enqueue(.streamClose(stream: stream, status: .cancelledByReceiver))
        } else {
            return
        }
        flush(now: now)
    }

    /// Accepts an offered resource, asking for its bytes from `offset` on (resume).
    package mutating func acceptResource(_ stream: UInt32, offset: UInt64, now: UInt64) throws {
        guard var s = inbound[stream], case .resource(accepted: false) = s.kind else { throw SessionError.unknownStream(stream) }
        s.kind = .resource(accepted: true)
        s.creditLeft = Int(config.streamWindow)
        s.lastGrant = now
        inbound[stream] = s
        enqueue(.resourceAccept(stream: stream, offset: offset, credit: config.streamWindow))
        flush(now: now)
    }

    /// Refuses or stops an incoming resource with a reason the sender can show (RESOURCE_ERROR,
    /// when the remote speaks minor 1; with the receiver's margin from minor 3), then cancels
    /// it as `close(stream:cancel:)` does.
    package mutating func refuseResource(_ stream: UInt32, error: ResourceError, now: UInt64) {
        guard inbound[stream] != nil else { return }
        if sharedMinor >= 1 { enqueue(.resourceError(stream: stream, error: error.readable(byMinor: sharedMinor))) }
        close(stream: stream, cancel: true, now: now)
    }

    /// Sends one step of a link negotiation (LINK_SETUP), reliably and in order with messages.
    /// Throws `SessionError.unsupportedByPeer` when the remote predates protocol minor 1.
    package mutating func sendLinkSetup(_ setup: LinkSetup, now: UInt64) throws {
        guard sharedMinor >= 1 else { throw SessionError.unsupportedByPeer("link negotiation (protocol minor 1)") }
        guard !links.isEmpty else { throw SessionError.noLink }
        enqueue(.linkSetup(setup))
        flush(now: now)
    }

    /// Reports whether a received resource verified; ends the transfer on both sides.
    package mutating func finishResource(_ stream: UInt32, ok: Bool, now: UInt64) {
        inbound.removeValue(forKey: stream)
        enqueue(.resourceResult(stream: stream, ok: ok))
        flush(now: now)
    }

    /// The application has processed `count` bytes of an incoming stream; credit is returned
    /// to the sender in batches of half the window. When half a window was consumed within
    /// two round trips of the previous grant, the window rather than the reader holds the
    /// stream back: it doubles, up to `maxStreamWindow`, and the grant includes the increase.
    /// Only while bulk travels on a fast link (`fastLinksOnly` or `fastBulkCarrier`): on
    /// Bluetooth the first window already holds more than the link has in flight, and a
    /// round trip measured behind queued bulk would let the window grow for nothing.
    package mutating func consumed(_ count: Int, of stream: UInt32, now: UInt64) {
        guard var s = inbound[stream] else { return }
        s.consumedSinceGrant += count
        if s.consumedSinceGrant >= s.window / 2 {
            var grant = s.consumedSinceGrant
            let elapsed = now >= s.lastGrant ? now - s.lastGrant : 0
            if fastLinksOnly || fastBulkCarrier, s.window < config.maxStreamWindow, elapsed < growthBound(s.link) {
                let grown = min(s.window * 2, config.maxStreamWindow)
                grant += grown - s.window
                s.window = grown
            }
            s.creditLeft += grant
            s.consumedSinceGrant = 0
            s.lastGrant = now
            enqueue(.streamCredit(stream: stream, bytes: UInt32(clamping: grant)))
        }
        inbound[stream] = s
        flush(now: now)
    }

    /// Two smoothed round trips of `link` in ms, at least 2 (the clock's resolution is 1 ms):
    /// credit returned faster than that means the writer waited for it.
    private func growthBound(_ link: LinkID?) -> UInt64 {
        let srtt = link.flatMap { links[$0]?.srtt } ?? 1
        return UInt64(max(2, (2 * srtt).rounded(.up)))
    }

    /// The current credit window of an incoming stream (tests, diagnostics).
    package func window(of stream: UInt32) -> Int? { inbound[stream]?.window }

    /// Leaves the session: tells the remote on every link and stops.
    package mutating func leave(reason: CloseReason = .leaving, text: String = "", now: UInt64) {
        guard !isClosed else { return }
        for link in linkOrder { transmit(.close(reason: reason, text: text), on: link, now: now) }
        isClosed = true
    }

    // MARK: - Input

    /// Processes one frame received on `link`.
    package mutating func receive(_ frame: Frame, on link: LinkID, now: UInt64) {
        guard !isClosed, links[link] != nil else { return }
        links[link]?.lastReceived = now
        // A suspected link that speaks again is asked at once whether it also listens: only
        // its answer (or an acknowledgement) clears the suspicion.
        if let s = links[link], s.suspect, now >= s.lastPing + config.suspectAfterMillis / 2 { ping(link, now: now) }
        switch frame {
        case let .reliable(seq, record):
            receiveReliable(.main, seq: seq, record: record, on: link, now: now)
        case let .bulk(seq, record):
            receiveReliable(.bulk, seq: seq, record: record, on: link, now: now)
        case let .ack(upTo):
            receiveAck(.main, upTo, on: link, now: now)
        case let .bulkAck(upTo):
            receiveAck(.bulk, upTo, on: link, now: now)
        case let .unreliable(payload):
            outputs.append(.event(.message(payload, reliable: false)))
        case let .ping(token):
            transmit(.pong(token: token), on: link, now: now)
        case let .pong(token):
            // Several pings may be outstanding on a slow link; any of them measures the RTT.
            if let s = links[link], s.outstandingPings.contains(token) {
                let rtt = now >= token ? now - token : 0
                links[link]?.rtt = rtt
                let sample = Double(rtt)
                if let old = s.srtt {
                    links[link]?.rttvar = 0.75 * s.rttvar + 0.25 * abs(old - sample)
                    links[link]?.srtt = 0.875 * old + 0.125 * sample
                } else {
                    links[link]?.srtt = sample
                    links[link]?.rttvar = sample / 2
                }
                // Older pings still unanswered were lost (links keep order).
                for old in s.outstandingPings where old < token && !s.countedLost.contains(old) { recordProbe(on: link, lost: true) }
                if !s.countedLost.contains(token) { recordProbe(on: link, lost: false) }
                links[link]?.outstandingPings.removeAll { $0 <= token }
                links[link]?.countedLost = s.countedLost.filter { $0 > token }
                outputs.append(.event(.roundTrip(link: link, millis: rtt)))
                progressed(link, now: now)
            }
        case let .close(reason, text):
            isClosed = true
            outputs.append(.event(.remoteLeft(reason: reason, text: text)))
        case .invite, .inviteReply:
            break  // link-level; handled before a session exists
        }
    }

    /// Advances timers: keepalives, suspected and dead links, delayed acknowledgements and
    /// throughput estimates.
    package mutating func tick(now: UInt64) {
        guard !isClosed else { return }
        observe(now: now)
        for link in linkOrder {
            guard let s = links[link] else { continue }
            if now >= s.lastReceived + config.deadAfterMillis {
                outputs.append(.event(.linkDead(link)))
                linkDown(link)
                continue
            }
            let carrying = Lane.allCases.contains { lane($0).carryingLink == link && lane($0).hasInflight }
            let frame = Lane.allCases.filter { lane($0).carryingLink == link }.map { lane($0).oldestInflightSize }.max() ?? 0
            let suspectAfter = suspectBound(of: s, frameBytes: frame)
            let due: Bool
            if carrying, now >= s.lastProgress + suspectAfter / 2 {
                // Data in flight and nothing acknowledged lately: probe often, so a live but
                // busy peer answers.
                due = s.outstandingPings.last.map { now >= $0 + suspectAfter / 2 } ?? true
            } else if let last = s.outstandingPings.last {
                due = now >= last + config.keepaliveMillis  // unanswered so far: probe again
            } else {
                // Idle in either direction, or no round trip measured by this side for a while
                // (the peer's probes keep both timers fresh, but the policy needs our own RTT).
                due = now >= s.lastSent + config.keepaliveMillis || now >= s.lastReceived + config.keepaliveMillis
                    || now >= s.lastPing + 2 * config.keepaliveMillis
            }
            if due { ping(link, now: now) }
            // A probe unanswered for long counts as lost now (a late answer still gives an RTT).
            let deadline = max(config.keepaliveMillis, 4 * (s.rtt ?? 0))
            for token in s.outstandingPings where now >= token + deadline && !(links[link]?.countedLost.contains(token) ?? true) {
                links[link]?.countedLost.insert(token)
                recordProbe(on: link, lost: true)
            }
            updateThroughput(of: link, now: now)
            if s.suspectBackoff > 1, now >= s.lastFalseAlarm + SessionCore.falseAlarmMemory {
                links[link]?.suspectBackoff = s.suspectBackoff / 2
                links[link]?.lastFalseAlarm = now
            }
        }
        suspectStalledCarriers(now: now)
        guard !acknowledgementsPaused else { return }
        for l in Lane.allCases where lane(l).receivedSinceAck > 0 {
            if let link = ackLink(for: l) { sendAck(l, on: link, now: now) }
        }
    }

    /// When `tick` next has something to do — a keepalive or probe, a probe to count as lost,
    /// a suspected or dead link, an acknowledgement due, a throughput sample — or nil when
    /// nothing waits for time. `now` when something is due already (an event made it so):
    /// tick at once. Each instant is computed the way `tick` tests it, so a driver that ticks
    /// only at these instants does what one ticking every millisecond would.
    package func nextDeadline(now: UInt64) -> UInt64? {
        let d = nextDeadlines(now: now)
        return [d.urgent, d.lazy].compactMap { $0 }.min()
    }

    /// `nextDeadline`, split by how late a wake may come: `urgent` (acknowledgements, probes
    /// of a busy carrier, suspicion, throughput ramps) as close to the instant as the driver
    /// can; `lazy` (idle keepalives and probe bookkeeping, dead links, throughput samples)
    /// may come somewhat late, so that a driver can wake many idle sessions at once.
    package func nextDeadlines(now: UInt64) -> (urgent: UInt64?, lazy: UInt64?) {
        guard !isClosed else { return (nil, nil) }
        var urgent: UInt64?, lazy: UInt64?
        func consider(_ t: UInt64?, _ best: inout UInt64?) {
            guard let t else { return }
            let at = max(t, now)
            if best.map({ at < $0 }) ?? true { best = at }
        }
        for link in linkOrder {
            guard let s = links[link] else { continue }
            consider(s.lastReceived + config.deadAfterMillis, &lazy)
            let carrying = Lane.allCases.contains { lane($0).carryingLink == link && lane($0).hasInflight }
            let frame = Lane.allCases.filter { lane($0).carryingLink == link }.map { lane($0).oldestInflightSize }.max() ?? 0
            let suspectAfter = suspectBound(of: s, frameBytes: frame)
            // The keepalive, by the same branches as `tick`: which one applies depends on time.
            let idleDue = s.outstandingPings.last.map { $0 + config.keepaliveMillis }
                ?? min(s.lastSent + config.keepaliveMillis, s.lastReceived + config.keepaliveMillis,
                       s.lastPing + 2 * config.keepaliveMillis)
            if carrying {
                let busyFrom = s.lastProgress + suspectAfter / 2
                let busyDue = max(busyFrom, s.outstandingPings.last.map { $0 + suspectAfter / 2 } ?? busyFrom)
                if idleDue < busyFrom { consider(idleDue, &lazy) }
                consider(busyDue, &urgent)
            } else {
                consider(idleDue, &lazy)
            }
            let lostAfter = max(config.keepaliveMillis, 4 * (s.rtt ?? 0))
            for token in s.outstandingPings where !s.countedLost.contains(token) { consider(token + lostAfter, &lazy) }
            if let t = throughputDue(s, now: now) {
                if s.saturated { consider(t, &urgent) } else { consider(t, &lazy) }
            }
            if s.suspectBackoff > 1 { consider(s.lastFalseAlarm + SessionCore.falseAlarmMemory, &lazy) }
        }
        for laneKind in Lane.allCases {
            let l = lane(laneKind)
            guard let link = l.carryingLink, let sent = l.oldestInflightSentAt, let s = links[link], !s.suspect,
                  linkOrder.contains(where: { $0 != link && links[$0]?.suspect == false }) else { continue }
            let bound = suspectBound(of: s, frameBytes: l.oldestInflightSize)
            let silent = s.lastReceived + bound
            let stuck = s.outstandingPings.first.map { max(s.lastProgress + bound, $0 + bound) }
            consider(max(sent + bound, min(silent, stuck ?? .max)), &urgent)
        }
        if !acknowledgementsPaused {
            for laneKind in Lane.allCases where lane(laneKind).receivedSinceAck > 0 && ackLink(for: laneKind) != nil {
                consider(ackDue[laneKind] ?? now, &urgent)
            }
        }
        return (urgent, lazy)
    }

    /// When `updateThroughput` next changes the estimate of a link (nil: not until bytes come).
    private func throughputDue(_ s: LinkState, now: UInt64) -> UInt64? {
        guard s.rateWindowBytes > 0 || s.saturated else { return nil }
        if s.saturated, s.rateWindowBytes >= SessionCore.rampBytes {
            let rampFrom = s.rateWindowStart + 250
            if rampFrom > now { return rampFrom }
            let elapsed = max(1, now - s.rateWindowStart)
            if Double(s.rateWindowBytes) * 1000 / Double(elapsed) > 1.5 * (s.throughput ?? 0) { return now }
        }
        return s.rateWindowStart + 1000
    }

    // MARK: - Internals

    /// The size of the pieces messages queued now are cut into.
    package var fragmentSize: Int { fragmentSize(large: fastLinksOnly) }

    /// The size of the pieces stream and resource bytes written now are cut into.
    package var bulkFragmentSize: Int { fragmentSize(large: fastLinksOnly || fastBulkCarrier) }

    private func fragmentSize(large: Bool) -> Int {
        max(256, min(large ? config.fastFragmentSize : config.fragmentSize, remoteMaxFrame - 32))
    }

    private mutating func allocateStreamID() -> UInt32 {
        defer { nextStreamID &+= 2 }
        return nextStreamID
    }

    private func isRemoteStreamID(_ id: UInt32) -> Bool { id != 0 && (id % 2 == 1) == (role == .responder) }

    private mutating func checkBacklog() throws {
        if backlogBytes > config.maxBacklog { throw SessionError.backlogFull(bytes: backlogBytes, limit: config.maxBacklog) }
    }

    private mutating func enqueue(_ record: Record) {
        modify(Lane.of(record)) { $0.enqueue(record) }
    }

    /// How long a carrier with data in flight may stay silent: at least `suspectAfter`, and
    /// more on slow or jittery links (twice the smoothed RTT plus four deviations, plus twice
    /// the awaited frame's transmission time at the measured throughput).
    private func suspectBound(of s: LinkState, frameBytes: Int) -> UInt64 {
        let rtt = 2 * (s.srtt ?? 0) + 4 * s.rttvar
        let frameTime = s.throughput.map { $0 > 0 ? 2000 * Double(frameBytes) / $0 : 0 } ?? 0
        let base = max(config.suspectAfterMillis, UInt64(min(rtt + frameTime, Double(config.deadAfterMillis))))
        return min(base * s.suspectBackoff, max(base, config.deadAfterMillis / 2))
    }

    private mutating func recordProbe(on link: LinkID, lost: Bool) {
        guard links[link] != nil else { return }
        links[link]?.probeOutcomes.append(lost)
        if let n = links[link]?.probeOutcomes.count, n > 20 { links[link]?.probeOutcomes.removeFirst(n - 20) }
    }

    /// Suspects carriers that have records in flight and made no progress past their bound:
    /// silent, or talking while a PING has gone unanswered that long (the direction towards
    /// the peer is stuck), when another link could take over.
    private mutating func suspectStalledCarriers(now: UInt64) {
        for lane in Lane.allCases {
            let l = self.lane(lane)
            guard let link = l.carryingLink, let sent = l.oldestInflightSentAt,
                  let s = links[link], !s.suspect else { continue }
            let bound = suspectBound(of: s, frameBytes: l.oldestInflightSize)
            let silent = now >= s.lastReceived + bound
            let stuck = now >= s.lastProgress + bound && (s.outstandingPings.first.map { now >= $0 + bound } ?? false)
            guard now >= sent + bound, silent || stuck,
                  linkOrder.contains(where: { $0 != link && links[$0]?.suspect == false }) else { continue }
            links[link]?.suspect = true
            links[link]?.suspectedAt = now
            links[link]?.suspectedBound = bound
            // (An acknowledgement for records a link carried may come back on another link.)
            outputs.append(.event(.linkSuspected(link, silentFor: now - (silent ? s.lastReceived : s.lastProgress))))
            flush(now: now)
        }
    }

    /// Folds acknowledged bytes into the link's capacity estimate once a second. A second in
    /// which the window was full measures capacity; other seconds can only raise the estimate.
    /// While a full window moves much more than the estimate says (a fast link whose shared
    /// bulk window, sized from the estimate, is still opening), it is raised every quarter
    /// second instead, once `rampBytes` have been acknowledged in that time.
    private mutating func updateThroughput(of link: LinkID, now: UInt64) {
        guard var s = links[link], now > s.rateWindowStart else { return }
        let elapsed = now - s.rateWindowStart
        let rate = Double(s.rateWindowBytes) * 1000 / Double(elapsed)
        let ramping = s.saturated && elapsed >= 250 && s.rateWindowBytes >= SessionCore.rampBytes
            && rate > 1.5 * (s.throughput ?? 0)
        guard elapsed >= 1000 || ramping else { return }
        if ramping {
            s.throughput = rate
        } else if s.saturated {
            s.throughput = s.throughput.map { 0.5 * $0 + 0.5 * rate } ?? rate
        } else if rate > (s.throughput ?? 0), s.rateWindowBytes > 0 {
            s.throughput = rate
        }
        s.rateWindowStart = now
        s.rateWindowBytes = 0
        s.saturated = false
        links[link] = s
    }

    /// Tells the core the time before a change that carries none (setting a preferred link):
    /// records that change sends are stamped with it.
    package mutating func observe(now: UInt64) { latestNow = max(latestNow, now) }

    private mutating func flush(now: UInt64? = nil) {
        guard !isClosed else { return }
        if let now { observe(now: now) }
        for l in Lane.allCases {
            guard let link = carrier(of: l) else { continue }
            let window = self.window(for: l, on: link)
            // Without a time, the latest known: a newly chosen carrier's own last send may be
            // a keepalive long ago, and records stamped with it would look overdue at once.
            let t = now ?? max(latestNow, links[link]?.lastSent ?? 0)
            // A new carrier: everything unacknowledged goes out again on it, in order.
            if lane(l).carryingLink != link { modify(l) { $0.restart(on: link) } }
            let copy = l == .main ? copyLink : nil
            while let frame = modify(l, { $0.nextToSend(window: window, now: t) }) {
                transmit(frame, on: link, now: t)
                if let copy, takeCopyBudget(frame.encodedSizeEstimate, now: t) { transmit(frame, on: copy, now: t) }
            }
            if lane(l).backlogBytes > 0, let s = links[link], !s.saturated {
                // A window that stayed empty past its second (nobody woke for it) starts now.
                if s.rateWindowBytes == 0, t >= s.rateWindowStart + 1000 { links[link]?.rateWindowStart = t }
                links[link]?.saturated = true
            }
        }
    }

    /// Whether a copy of `bytes` fits the copy budget now (and spends it).
    private mutating func takeCopyBudget(_ bytes: Int, now: UInt64) -> Bool {
        let rate = copyBytesPerSecond
        if now > copyRefilledAt {
            copyTokens = min(rate, copyTokens + rate * Double(now - copyRefilledAt) / 1000)
            copyRefilledAt = now
        }
        guard copyTokens >= Double(bytes) else { return false }
        copyTokens -= Double(bytes)
        return true
    }

    /// The bytes a lane may have in flight on `link`. Bulk data that shares the message
    /// carrier is held to about `sharedBulkTime` of the link's measured throughput (at least
    /// `sharedBulkMinimum`), so a message never queues behind seconds of file data.
    private func window(for lane: Lane, on link: LinkID) -> Int {
        guard lane == .bulk, carrier(of: .main) == link else { return config.sendWindow }
        let rate = links[link]?.throughput ?? 0
        return min(config.sendWindow, max(config.sharedBulkMinimum, Int(rate * Double(config.sharedBulkMillis) / 1000)))
    }

    private mutating func receiveAck(_ lane: Lane, _ upTo: UInt64, on link: LinkID, now: UInt64) {
        guard let acked = modify(lane, { $0.acknowledge(upTo: upTo) }) else {
            let last = self.lane(lane).nextSeq - 1
            outputs.append(.event(.protocolViolation("acknowledgement of \(upTo) for \(lane.rawValue) records never sent (last is \(last))")))
            return
        }
        if let carrier = self.lane(lane).carryingLink {
            // A window that stayed empty past its second (nobody woke for it) starts now.
            if let s = links[carrier], s.rateWindowBytes == 0, !s.saturated, now >= s.rateWindowStart + 1000 {
                links[carrier]?.rateWindowStart = now
            }
            links[carrier]?.rateWindowBytes += acked
            // While a copy link also carries the records, an acknowledgement that comes back on
            // it may be for what only the copy delivered: it says nothing of the carrier.
            let copied = lane == .main && copyLink != nil && link != carrier
            if acked > 0, !copied { progressed(carrier, now: now) }
        }
        flush(now: now)
    }

    /// Sends a PING on `link` (token = now), remembering at most `maxOutstandingPings`
    /// unanswered ones; older ones are forgotten as lost.
    private mutating func ping(_ link: LinkID, now: UInt64) {
        guard let s = links[link] else { return }
        var pings = s.outstandingPings + [now]
        if pings.count > SessionCore.maxOutstandingPings {
            for old in pings.prefix(pings.count - SessionCore.maxOutstandingPings) where !s.countedLost.contains(old) {
                recordProbe(on: link, lost: true)
            }
            pings.removeFirst(pings.count - SessionCore.maxOutstandingPings)
        }
        links[link]?.outstandingPings = pings
        links[link]?.lastPing = now
        transmit(.ping(token: now), on: link, now: now)
    }

    /// What `link` carries arrives: note it, and clear a suspicion.
    private mutating func progressed(_ link: LinkID, now: UInt64) {
        guard links[link] != nil else { return }
        links[link]?.lastProgress = now
        if var s = links[link], s.suspect {
            s.suspect = false
            // Silent for less than two bounds in all: the link stalls now and then on its own
            // (its retransmissions after a loss) rather than going away. Be slower to leave it.
            if now < s.suspectedAt + s.suspectedBound {
                s.suspectBackoff = min(2 * s.suspectBackoff, SessionCore.maxSuspectBackoff)
                s.lastFalseAlarm = now
            }
            links[link] = s
            outputs.append(.event(.linkRecovered(link)))
            flush(now: now)
        }
    }

    private mutating func receiveReliable(_ lane: Lane, seq: UInt64, record: Record, on link: LinkID, now: UInt64) {
        let maxReorder = config.maxReorder
        let arrival = modify(lane) { $0.receive(seq: seq, record: record, on: link, maxReorder: maxReorder) }
        switch arrival {
        case let .deliver(records):
            for r in records { deliver(r, on: link, now: now) }
        case .held, .duplicate:
            break
        case .overflow:
            outputs.append(.event(.protocolViolation("more than \(config.maxReorder) \(lane.rawValue) records out of order")))
        }
        let l = self.lane(lane)
        if l.receivedSinceAck >= config.ackEvery || l.receivedBytesSinceAck >= config.ackBytes, !acknowledgementsPaused {
            sendAck(lane, on: link, now: now)
        } else if l.receivedSinceAck > 0, ackDue[lane] == nil {
            ackDue[lane] = now + config.ackDelayMillis
        }
    }

    /// Acknowledgements go back on the link the records came on, unless it is gone.
    private func ackLink(for lane: Lane) -> LinkID? {
        if let l = self.lane(lane).ackLink, links[l] != nil, links[l]?.suspect == false { return l }
        return activeLink
    }

    private mutating func sendAck(_ lane: Lane, on link: LinkID, now: UInt64) {
        ackDue[lane] = nil
        let frame = modify(lane) { $0.takeAck() }
        transmit(frame, on: link, now: now)
    }

    /// The parts in `reassembly` and `last`, joined. A first part that starts its array may be
    /// all of it (a payload a link decrypted apart): that array is taken and the rest appended
    /// in place when it is ours alone and has room. Other parts are copied once, into an array
    /// of the final size.
    private mutating func joinedMessage(ending last: ArraySlice<UInt8>) -> [UInt8] {
        let total = reassemblyBytes + last.count
        var parts = reassembly
        reassembly = []
        reassemblyBytes = 0
        let first = parts.removeFirst()
        var message: [UInt8]
        if first.startIndex == 0 {
            message = Array(consume first)
            if message.capacity < total { message.reserveCapacity(total) }
        } else {
            message = []
            message.reserveCapacity(total)
            message.append(contentsOf: first)
        }
        for part in parts { message.append(contentsOf: part) }
        message.append(contentsOf: last)
        return message
    }

    private mutating func deliver(_ record: Record, on link: LinkID, now: UInt64) {
        switch record {
        case let .messagePart(final, bytes):
            guard reassemblyBytes + bytes.count <= config.maxMessageSize else {
                reassembly = []
                reassemblyBytes = 0
                outputs.append(.event(.protocolViolation("message larger than \(config.maxMessageSize) bytes")))
                return
            }
            guard final else {
                reassembly.append(bytes)
                reassemblyBytes += bytes.count
                return
            }
            // `Array(slice)` takes the slice's storage when the slice is all of it (a link that
            // decrypts payloads apart), else it is the one copy out of the link's buffer.
            if reassembly.isEmpty {
                outputs.append(.event(.message(Array(bytes), reliable: true)))
                return
            }
            outputs.append(.event(.message(joinedMessage(ending: bytes), reliable: true)))
        case let .streamOpen(id, name):
            guard isRemoteStreamID(id), inbound[id] == nil else {
                outputs.append(.event(.protocolViolation("stream id \(id) reused or of the wrong side")))
                return
            }
            inbound[id] = Inbound(kind: .stream, creditLeft: Int(config.streamWindow), consumedSinceGrant: 0,
                                  window: Int(config.streamWindow), lastGrant: now)
            enqueue(.streamCredit(stream: id, bytes: config.streamWindow))
            outputs.append(.event(.streamOpened(stream: id, name: name)))
            flush(now: now)
        case let .resourceOffer(id, size, sha, name):
            guard isRemoteStreamID(id), inbound[id] == nil else {
                outputs.append(.event(.protocolViolation("resource id \(id) reused or of the wrong side")))
                return
            }
            inbound[id] = Inbound(kind: .resource(accepted: false), creditLeft: 0, consumedSinceGrant: 0,
                                  window: Int(config.streamWindow), lastGrant: now)
            outputs.append(.event(.resourceOffered(stream: id, name: name, size: size, sha256: sha)))
        case let .resourceOfferKeyed(id, size, key, name):
            guard isRemoteStreamID(id), inbound[id] == nil else {
                outputs.append(.event(.protocolViolation("resource id \(id) reused or of the wrong side")))
                return
            }
            inbound[id] = Inbound(kind: .resource(accepted: false), creditLeft: 0, consumedSinceGrant: 0,
                                  window: Int(config.streamWindow), lastGrant: now)
            outputs.append(.event(.resourceOfferedKeyed(stream: id, name: name, size: size, key: key)))
        case let .resourceDigest(id, sha):
            // Only for a resource we accepted; one cancelled here may still have it in flight.
            guard case .resource(accepted: true)? = inbound[id]?.kind else { return }
            outputs.append(.event(.resourceDigest(stream: id, sha256: sha)))
        case let .streamData(id, bytes):
            guard var s = inbound[id] else { return }  // cancelled locally: late data is dropped
            guard bytes.count <= s.creditLeft else {
                outputs.append(.event(.protocolViolation("stream \(id): \(bytes.count) bytes sent with \(s.creditLeft) bytes of credit")))
                return
            }
            s.creditLeft -= bytes.count
            s.link = link
            inbound[id] = s
            outputs.append(.event(.streamData(stream: id, bytes: bytes)))
        case let .streamCredit(id, n):
            guard let c = outboundCredit[id] else { return }
            outboundCredit[id] = c + Int(n)
            outputs.append(.event(.streamWritable(stream: id)))
        case let .streamClose(id, status):
            if status == .cancelledByReceiver {
                // A resource the sender already finished writing is still the receiver's to
                // refuse (its write or check failed): the sender must hear of it.
                let resourceAwaitingVerdict = outgoingResources.remove(id) != nil
                guard outboundCredit.removeValue(forKey: id) != nil || resourceAwaitingVerdict else { return }
            } else {
                if case .resource? = inbound[id]?.kind, status == .finished {
                    // The resource stays open until the receiver reports the hash check.
                } else if inbound.removeValue(forKey: id) == nil {
                    return
                }
            }
            outputs.append(.event(.streamClosed(stream: id, status: status)))
        case let .resourceAccept(id, offset, credit):
            guard let c = outboundCredit[id] else { return }
            outboundCredit[id] = c + Int(credit)
            outputs.append(.event(.resourceAccepted(stream: id, offset: offset)))
        case let .resourceResult(id, ok):
            outboundCredit.removeValue(forKey: id)
            guard outgoingResources.remove(id) != nil else { return }
            outputs.append(.event(.resourceResult(stream: id, ok: ok)))
        case let .resourceError(id, error):
            // Only for our own outgoing resources; the STREAM_CLOSE behind it ends the stream.
            guard outgoingResources.contains(id) else { return }
            outputs.append(.event(.resourceError(stream: id, error: error)))
        case let .linkSetup(setup):
            outputs.append(.event(.linkSetup(setup)))
        }
    }

    private mutating func transmit(_ frame: Frame, on link: LinkID, now: UInt64) {
        links[link]?.lastSent = now
        outputs.append(.transmit(link: link, frame: frame))
    }
}

extension Frame {
    /// Bytes this frame occupies on the wire before encryption (exact for reliable frames'
    /// payloads up to a few bytes of header; used for window accounting only).
    var encodedSizeEstimate: Int {
        switch self {
        case let .reliable(_, record), let .bulk(_, record):
            switch record {
            case let .messagePart(_, b): return 11 + b.count
            case let .streamData(_, b): return 14 + b.count
            default: return 64
            }
        default: return 16
        }
    }
}
