import PeerLinkWire

/// The session protocol with one remote peer, as a state machine without I/O.
///
/// Feed it link changes, received frames, application requests and the time; collect
/// `takeOutputs()` afterwards and carry them out (transmit frames, deliver events).
/// Reliable records carry end-to-end sequence numbers and stay buffered until acknowledged,
/// so when the carrying link dies they are resent on the next one: the receiver drops
/// duplicates and restores order, and gets each record exactly once.
public struct SessionCore: Sendable {
    public enum Role: Sendable { case initiator, responder }

    public let config: SessionConfig
    public let role: Role
    /// Unanswered pings remembered per link, so a slow pong still measures the RTT.
    static let maxOutstandingPings = 8
    public private(set) var isClosed = false

    // MARK: links
    struct LinkState: Sendable {
        var lastReceived: UInt64
        var lastSent: UInt64
        /// Tokens (send times) of unanswered pings, oldest first, at most `maxOutstandingPings`.
        var outstandingPings: [UInt64] = []
        var rtt: UInt64?
    }
    private var links: [LinkID: LinkState] = [:]
    private var linkOrder: [LinkID] = []
    /// While true, received reliable records are not acknowledged, so the sender stops once its
    /// window is full: set it while the application is behind on consuming events (flow
    /// control end to end). Frames are still read, so keepalives keep working.
    public var acknowledgementsPaused = false

    /// The link chosen by policy to carry traffic; when nil or dead, the oldest live link.
    public var preferredLink: LinkID? { didSet { flush() } }
    /// The link that received the outbox's in-flight records.
    private var carryingLink: LinkID?

    // MARK: reliable send
    struct Pending: Sendable { let seq: UInt64; let record: Record; let size: Int }
    private var outbox: [Pending] = []
    private var outboxHead = 0
    private var sentIndex = 0
    private var inflightBytes = 0
    private var outboxBytes = 0
    private var nextSeq: UInt64 = 1
    private var remoteMaxFrame = WireLimits.frame

    // MARK: reliable receive
    private var delivered: UInt64 = 0
    private var reorder: [UInt64: Record] = [:]
    private var receivedSinceAck = 0
    private var reassembly: [UInt8] = []

    // MARK: streams
    enum InboundKind: Sendable { case stream, resource(accepted: Bool) }
    struct Inbound: Sendable { var kind: InboundKind; var creditLeft: Int; var consumedSinceGrant: Int }
    private var inbound: [UInt32: Inbound] = [:]
    private var outboundCredit: [UInt32: Int] = [:]
    private var nextStreamID: UInt32

    private var outputs: [SessionOutput] = []

    public init(role: Role, config: SessionConfig = SessionConfig()) {
        self.role = role
        self.config = config
        self.nextStreamID = role == .initiator ? 1 : 2
    }

    /// Everything produced since the last call, in order.
    public mutating func takeOutputs() -> [SessionOutput] {
        defer { outputs.removeAll(keepingCapacity: true) }
        return outputs
    }

    // MARK: - Links

    /// The live links, oldest first.
    public var liveLinks: [LinkID] { linkOrder }
    /// The link carrying reliable traffic now, if any.
    public var activeLink: LinkID? {
        if let p = preferredLink, links[p] != nil { return p }
        return linkOrder.first
    }
    /// Last measured round-trip time of a link.
    public func roundTrip(of link: LinkID) -> UInt64? { links[link]?.rtt }
    /// Reliable bytes not yet acknowledged (sent or queued).
    public var unacknowledgedBytes: Int { outboxBytes }
    /// Reliable bytes queued behind the window.
    public var backlogBytes: Int { outboxBytes - inflightBytes }

    /// The remote's hello said it accepts frames up to this size.
    public mutating func setRemoteMaxFrame(_ n: Int) { remoteMaxFrame = max(1024, min(n, WireLimits.frame)) }

    public mutating func linkUp(_ link: LinkID, now: UInt64) {
        guard links[link] == nil, !isClosed else { return }
        links[link] = LinkState(lastReceived: now, lastSent: now)
        linkOrder.append(link)
        flush()
    }

    /// The link is gone (closed, failed, or declared dead). In-flight records move to the next link.
    public mutating func linkDown(_ link: LinkID) {
        guard links.removeValue(forKey: link) != nil else { return }
        linkOrder.removeAll { $0 == link }
        if preferredLink == link { preferredLink = nil }
        // A link that comes back under the same name is a new carrier: resend on it.
        if carryingLink == link { carryingLink = nil }
        flush()
    }

    // MARK: - Application requests

    /// Queues an application message. Reliable messages are fragmented and delivered exactly
    /// once in order; unreliable ones go out now on the active link or not at all.
    public mutating func send(_ message: [UInt8], reliable: Bool, now: UInt64) throws {
        guard !isClosed else { throw SessionError.closed }
        if !reliable {
            let limit = remoteMaxFrame - 1
            guard message.count <= limit else { throw SessionError.messageTooLarge(size: message.count, limit: limit) }
            guard let link = activeLink else { throw SessionError.noLink }
            transmit(.unreliable(payload: message), on: link, now: now)
            return
        }
        guard message.count <= config.maxMessageSize else {
            throw SessionError.messageTooLarge(size: message.count, limit: config.maxMessageSize)
        }
        try checkBacklog()
        let piece = fragmentSize
        var offset = 0
        repeat {
            let end = min(offset + piece, message.count)
            enqueue(.messagePart(final: end == message.count, bytes: Array(message[offset..<end])))
            offset = end
        } while offset < message.count
        flush(now: now)
    }

    /// Opens an outgoing byte stream; bytes may be written once the remote grants credit.
    public mutating func openStream(name: String, now: UInt64) throws -> UInt32 {
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
    public mutating func offerResource(name: String, size: UInt64, sha256: [UInt8], now: UInt64) throws -> UInt32 {
        guard !isClosed else { throw SessionError.closed }
        guard name.utf8.count <= WireLimits.name, sha256.count == 32 else {
            throw SessionError.messageTooLarge(size: name.utf8.count, limit: WireLimits.name)
        }
        let id = allocateStreamID()
        outboundCredit[id] = 0
        enqueue(.resourceOffer(stream: id, size: size, sha256: sha256, name: name))
        flush(now: now)
        return id
    }

    /// Bytes that may be written on an outgoing stream now.
    public func credit(of stream: UInt32) -> Int? { outboundCredit[stream] }

    /// Writes stream or resource bytes, at most the stream's credit.
    public mutating func write(_ bytes: [UInt8], to stream: UInt32, now: UInt64) throws {
        guard !isClosed else { throw SessionError.closed }
        guard let credit = outboundCredit[stream] else { throw SessionError.unknownStream(stream) }
        guard bytes.count <= credit else { throw SessionError.noCredit(stream: stream, available: credit) }
        outboundCredit[stream] = credit - bytes.count
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + fragmentSize, bytes.count)
            enqueue(.streamData(stream: stream, bytes: Array(bytes[offset..<end])))
            offset = end
        }
        flush(now: now)
    }

    /// Ends an outgoing stream normally, or cancels a stream in either direction.
    public mutating func close(stream: UInt32, cancel: Bool, now: UInt64) {
        if outboundCredit.removeValue(forKey: stream) != nil {
            enqueue(.streamClose(stream: stream, status: cancel ? .cancelledBySender : .finished))
        } else if inbound.removeValue(forKey: stream) != nil {
            enqueue(.streamClose(stream: stream, status: .cancelledByReceiver))
        } else {
            return
        }
        flush(now: now)
    }

    /// Accepts an offered resource, asking for its bytes from `offset` on (resume).
    public mutating func acceptResource(_ stream: UInt32, offset: UInt64, now: UInt64) throws {
        guard var s = inbound[stream], case .resource(accepted: false) = s.kind else { throw SessionError.unknownStream(stream) }
        s.kind = .resource(accepted: true)
        s.creditLeft = Int(config.streamWindow)
        inbound[stream] = s
        enqueue(.resourceAccept(stream: stream, offset: offset, credit: config.streamWindow))
        flush(now: now)
    }

    /// Reports whether a received resource verified; ends the transfer on both sides.
    public mutating func finishResource(_ stream: UInt32, ok: Bool, now: UInt64) {
        inbound.removeValue(forKey: stream)
        enqueue(.resourceResult(stream: stream, ok: ok))
        flush(now: now)
    }

    /// The application has processed `count` bytes of an incoming stream; credit is returned
    /// to the sender in batches of half the window.
    public mutating func consumed(_ count: Int, of stream: UInt32, now: UInt64) {
        guard var s = inbound[stream] else { return }
        s.consumedSinceGrant += count
        if s.consumedSinceGrant >= Int(config.streamWindow) / 2 {
            let grant = s.consumedSinceGrant
            s.creditLeft += grant
            s.consumedSinceGrant = 0
            enqueue(.streamCredit(stream: stream, bytes: UInt32(clamping: grant)))
        }
        inbound[stream] = s
        flush(now: now)
    }

    /// Leaves the session: tells the remote on every link and stops.
    public mutating func leave(reason: CloseReason = .leaving, text: String = "", now: UInt64) {
        guard !isClosed else { return }
        for link in linkOrder { transmit(.close(reason: reason, text: text), on: link, now: now) }
        isClosed = true
    }

    // MARK: - Input

    /// Processes one frame received on `link`.
    public mutating func receive(_ frame: Frame, on link: LinkID, now: UInt64) {
        guard !isClosed, links[link] != nil else { return }
        links[link]?.lastReceived = now
        switch frame {
        case let .reliable(seq, record):
            receiveReliable(seq: seq, record: record, on: link, now: now)
        case let .ack(upTo):
            receiveAck(upTo)
            flush(now: now)
        case let .unreliable(payload):
            outputs.append(.event(.message(payload, reliable: false)))
        case let .ping(token):
            transmit(.pong(token: token), on: link, now: now)
        case let .pong(token):
            // Several pings may be outstanding on a slow link; any of them measures the RTT.
            if let pings = links[link]?.outstandingPings, pings.contains(token) {
                let rtt = now >= token ? now - token : 0
                links[link]?.rtt = rtt
                links[link]?.outstandingPings.removeAll { $0 <= token }
                outputs.append(.event(.roundTrip(link: link, millis: rtt)))
            }
        case let .close(reason, text):
            isClosed = true
            outputs.append(.event(.remoteLeft(reason: reason, text: text)))
        case .invite, .inviteReply:
            break  // link-level; handled before a session exists
        }
    }

    /// Advances timers: keepalives, dead-link detection and delayed acknowledgements.
    public mutating func tick(now: UInt64) {
        guard !isClosed else { return }
        for link in linkOrder {
            guard let s = links[link] else { continue }
            if now >= s.lastReceived + config.deadAfter {
                outputs.append(.event(.linkDead(link)))
                linkDown(link)
                continue
            }
            let due: Bool
            if let last = s.outstandingPings.last {
                due = now >= last + config.keepaliveInterval  // unanswered so far: probe again
            } else {
                due = now >= s.lastSent + config.keepaliveInterval || now >= s.lastReceived + config.keepaliveInterval
            }
            if due {
                var pings = s.outstandingPings + [now]
                if pings.count > SessionCore.maxOutstandingPings { pings.removeFirst(pings.count - SessionCore.maxOutstandingPings) }
                links[link]?.outstandingPings = pings
                transmit(.ping(token: now), on: link, now: now)
            }
        }
        if receivedSinceAck > 0, !acknowledgementsPaused, let link = activeLink { sendAck(on: link, now: now) }
    }

    // MARK: - Internals

    private var fragmentSize: Int { max(256, min(config.fragmentSize, remoteMaxFrame - 32)) }

    private mutating func allocateStreamID() -> UInt32 {
        defer { nextStreamID &+= 2 }
        return nextStreamID
    }

    private func isRemoteStreamID(_ id: UInt32) -> Bool { id != 0 && (id % 2 == 1) == (role == .responder) }

    private mutating func checkBacklog() throws {
        if backlogBytes > config.maxBacklog { throw SessionError.backlogFull(bytes: backlogBytes, limit: config.maxBacklog) }
    }

    private mutating func enqueue(_ record: Record) {
        let size = Frame.reliable(seq: nextSeq, record: record).encodedSizeEstimate
        outbox.append(Pending(seq: nextSeq, record: record, size: size))
        outboxBytes += size
        nextSeq += 1
    }

    private mutating func flush(now: UInt64? = nil) {
        guard !isClosed, let link = activeLink else { return }
        let t = now ?? links[link]?.lastSent ?? 0
        if carryingLink != link {
            // A new carrier: everything unacknowledged goes out again on it, in order.
            carryingLink = link
            sentIndex = outboxHead
            inflightBytes = 0
        }
        while sentIndex < outbox.count, inflightBytes < config.sendWindow {
            let p = outbox[sentIndex]
            transmit(.reliable(seq: p.seq, record: p.record), on: link, now: t)
            inflightBytes += p.size
            sentIndex += 1
        }
    }

    private mutating func receiveAck(_ upTo: UInt64) {
        guard upTo < nextSeq else {
            outputs.append(.event(.protocolViolation("acknowledgement of \(upTo) for records never sent (last is \(nextSeq - 1))")))
            return
        }
        while outboxHead < outbox.count, outbox[outboxHead].seq <= upTo {
            let p = outbox[outboxHead]
            outboxBytes -= p.size
            if outboxHead < sentIndex { inflightBytes -= p.size }
            outboxHead += 1
        }
        if sentIndex < outboxHead { sentIndex = outboxHead }
        if outboxHead > 1024, outboxHead * 2 > outbox.count {
            outbox.removeFirst(outboxHead)
            sentIndex -= outboxHead
            outboxHead = 0
        }
    }

    private mutating func receiveReliable(seq: UInt64, record: Record, on link: LinkID, now: UInt64) {
        receivedSinceAck += 1
        if seq == delivered + 1 {
            deliver(record, now: now)
            delivered = seq
            while let next = reorder.removeValue(forKey: delivered + 1) {
                deliver(next, now: now)
                delivered += 1
            }
        } else if seq > delivered + 1 {
            if reorder.count >= config.maxReorder {
                outputs.append(.event(.protocolViolation("more than \(config.maxReorder) reliable records out of order")))
            } else {
                reorder[seq] = record
            }
        }
        // seq <= delivered: a duplicate after a link change; acknowledged, not delivered again.
        if receivedSinceAck >= config.ackEvery, !acknowledgementsPaused { sendAck(on: link, now: now) }
    }

    private mutating func sendAck(on link: LinkID, now: UInt64) {
        receivedSinceAck = 0
        transmit(.ack(upTo: delivered), on: link, now: now)
    }

    private mutating func deliver(_ record: Record, now: UInt64) {
        switch record {
        case let .messagePart(final, bytes):
            guard reassembly.count + bytes.count <= config.maxMessageSize else {
                reassembly = []
                outputs.append(.event(.protocolViolation("message larger than \(config.maxMessageSize) bytes")))
                return
            }
            reassembly.append(contentsOf: bytes)
            if final {
                outputs.append(.event(.message(reassembly, reliable: true)))
                reassembly = []
            }
        case let .streamOpen(id, name):
            guard isRemoteStreamID(id), inbound[id] == nil else {
                outputs.append(.event(.protocolViolation("stream id \(id) reused or of the wrong side")))
                return
            }
            inbound[id] = Inbound(kind: .stream, creditLeft: Int(config.streamWindow), consumedSinceGrant: 0)
            enqueue(.streamCredit(stream: id, bytes: config.streamWindow))
            outputs.append(.event(.streamOpened(stream: id, name: name)))
            flush(now: now)
        case let .resourceOffer(id, size, sha, name):
            guard isRemoteStreamID(id), inbound[id] == nil else {
                outputs.append(.event(.protocolViolation("resource id \(id) reused or of the wrong side")))
                return
            }
            inbound[id] = Inbound(kind: .resource(accepted: false), creditLeft: 0, consumedSinceGrant: 0)
            outputs.append(.event(.resourceOffered(stream: id, name: name, size: size, sha256: sha)))
        case let .streamData(id, bytes):
            guard var s = inbound[id] else { return }  // cancelled locally: late data is dropped
            guard bytes.count <= s.creditLeft else {
                outputs.append(.event(.protocolViolation("stream \(id): \(bytes.count) bytes sent with \(s.creditLeft) bytes of credit")))
                return
            }
            s.creditLeft -= bytes.count
            inbound[id] = s
            outputs.append(.event(.streamData(stream: id, bytes: bytes)))
        case let .streamCredit(id, n):
            guard let c = outboundCredit[id] else { return }
            outboundCredit[id] = c + Int(n)
            outputs.append(.event(.streamWritable(stream: id)))
        case let .streamClose(id, status):
            if status == .cancelledByReceiver {
                guard outboundCredit.removeValue(forKey: id) != nil else { return }
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
            outputs.append(.event(.resourceResult(stream: id, ok: ok)))
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
        case let .reliable(_, record):
            switch record {
            case let .messagePart(_, b): return 11 + b.count
            case let .streamData(_, b): return 14 + b.count
            default: return 64
            }
        default: return 16
        }
    }
}
