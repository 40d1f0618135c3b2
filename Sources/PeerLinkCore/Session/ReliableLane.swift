import PeerLinkWire

/// One of a session's reliable sequence spaces. Each lane has its own sequence numbers,
/// acknowledgements and carrier, so bulk data can travel on a fast link while messages stay on
/// another without either blocking the other's order.
package enum Lane: String, Sendable, CaseIterable, Codable {
    /// Messages and every control record (stream open, credit, offers, answers).
    case main
    /// Stream and resource bytes, and the close that ends them.
    case bulk

    /// The lane that carries `record`: data and its end travel together, the rest on `main`.
    package static func of(_ record: Record) -> Lane {
        switch record {
        case .streamData, .streamClose, .resourceError, .resourceDigest: return .bulk
        default: return .main
        }
    }

    /// The frame that carries a record of this lane.
    func frame(seq: UInt64, record: Record) -> Frame {
        self == .main ? .reliable(seq: seq, record: record) : .bulk(seq: seq, record: record)
    }

    /// The frame that acknowledges this lane.
    func ack(upTo: UInt64) -> Frame {
        self == .main ? .ack(upTo: upTo) : .bulkAck(upTo: upTo)
    }
}

/// Send and receive state of one lane, without I/O: an outbox of unacknowledged records and a
/// reorder buffer for records that arrived early.
struct ReliableLane: Sendable {
    struct Pending: Sendable {
        let seq: UInt64
        let record: Record
        let size: Int
        /// When this record was last put on a link (0 before the first time).
        var sentAt: UInt64 = 0
    }

    let lane: Lane

    // Sending
    private(set) var outbox: [Pending] = []
    private(set) var outboxHead = 0
    private(set) var sentIndex = 0
    private(set) var inflightBytes = 0
    private(set) var outboxBytes = 0
    private(set) var nextSeq: UInt64 = 1
    /// The link that received the in-flight records; a different carrier gets them all again.
    var carryingLink: LinkID?

    // Receiving
    private(set) var delivered: UInt64 = 0
    private var reorder: [UInt64: Record] = [:]
    var receivedSinceAck = 0
    /// Estimated bytes of the frames counted in `receivedSinceAck`.
    var receivedBytesSinceAck = 0
    /// The link the latest record arrived on: acknowledgements go back the same way.
    var ackLink: LinkID?

    init(_ lane: Lane) { self.lane = lane }

    var backlogBytes: Int { outboxBytes - inflightBytes }
    var hasInflight: Bool { sentIndex > outboxHead }
    /// Send time of the oldest record in flight.
    var oldestInflightSentAt: UInt64? { hasInflight ? outbox[outboxHead].sentAt : nil }
    /// Estimated size of the oldest record in flight.
    var oldestInflightSize: Int { hasInflight ? outbox[outboxHead].size : 0 }

    mutating func enqueue(_ record: Record) {
        let size = lane.frame(seq: nextSeq, record: record).encodedSizeEstimate
        outbox.append(Pending(seq: nextSeq, record: record, size: size))
        outboxBytes += size
        nextSeq += 1
    }

    /// Starts over on a new carrier: everything unacknowledged is due again, in order.
    mutating func restart(on link: LinkID) {
        carryingLink = link
        sentIndex = outboxHead
        inflightBytes = 0
    }

    /// The next record to put on the carrier if the window allows, marking it sent at `now`.
    mutating func nextToSend(window: Int, now: UInt64) -> Frame? {
        guard sentIndex < outbox.count, inflightBytes < window else { return nil }
        outbox[sentIndex].sentAt = now
        let p = outbox[sentIndex]
        inflightBytes += p.size
        sentIndex += 1
        return lane.frame(seq: p.seq, record: p.record)
    }

    /// Drops everything up to `upTo` from the outbox; returns the bytes acknowledged, or nil
    /// when the remote acknowledged records that were never sent.
    mutating func acknowledge(upTo: UInt64) -> Int? {
        guard upTo < nextSeq else { return nil }
        var acked = 0
        while outboxHead < outbox.count, outbox[outboxHead].seq <= upTo {
            let p = outbox[outboxHead]
            outboxBytes -= p.size
            acked += p.size
            if outboxHead < sentIndex { inflightBytes -= p.size }
            outboxHead += 1
        }
        if sentIndex < outboxHead { sentIndex = outboxHead }
        if outboxHead > 1024, outboxHead * 2 > outbox.count {
            outbox.removeFirst(outboxHead)
            sentIndex -= outboxHead
            outboxHead = 0
        }
        return acked
    }

    enum Arrival: Equatable { case deliver([Record]), held, duplicate, overflow }

    /// Takes a received record: returns what is now deliverable in order, or why nothing is.
    mutating func receive(seq: UInt64, record: Record, on link: LinkID, maxReorder: Int) -> Arrival {
        receivedSinceAck += 1
        receivedBytesSinceAck += lane.frame(seq: seq, record: record).encodedSizeEstimate
        ackLink = link
        if seq == delivered + 1 {
            var ready = [record]
            delivered = seq
            while let next = reorder.removeValue(forKey: delivered + 1) {
                ready.append(next)
                delivered += 1
            }
            return .deliver(ready)
        }
        if seq <= delivered { return .duplicate }  // resent after a link change; acknowledged again
        if reorder[seq] != nil { return .held }
        guard reorder.count < maxReorder else { return .overflow }
        reorder[seq] = record
        return .held
    }

    /// The acknowledgement to send now (resets the counter).
    mutating func takeAck() -> Frame {
        receivedSinceAck = 0
        receivedBytesSinceAck = 0
        return lane.ack(upTo: delivered)
    }
}
