/// The sans-I/O heart of the IP lab's delaying relay: bytes that arrived at some time may leave
/// `delay` later, in order, and at most `limit` bytes wait at once (a full queue stops reading,
/// so TCP's flow control still reaches the sender). Times are milliseconds on any monotonic clock.
struct DelayQueue {
    let delay: Int
    let limit: Int
    private var chunks: [(due: Int, bytes: [UInt8])] = []
    private var head = 0
    private(set) var queued = 0

    init(delay: Int, limit: Int = 4 << 20) {
        precondition(delay >= 0 && limit > 0)
        self.delay = delay
        self.limit = limit
    }

    /// Whether a reader may take more bytes now.
    var hasRoom: Bool { queued < limit }
    var isEmpty: Bool { head == chunks.count }

    /// Bytes read at `now` may leave at `now + delay`.
    mutating func push(_ bytes: [UInt8], at now: Int) {
        guard !bytes.isEmpty else { return }
        chunks.append((now + delay, bytes))
        queued += bytes.count
    }

    /// When the oldest waiting chunk is due, or nil if nothing waits.
    var nextDue: Int? { isEmpty ? nil : chunks[head].due }

    /// Every chunk due at `now`, oldest first, joined.
    mutating func pop(at now: Int) -> [UInt8] {
        var out: [UInt8] = []
        while head < chunks.count, chunks[head].due <= now {
            out += chunks[head].bytes
            queued -= chunks[head].bytes.count
            head += 1
        }
        if head > 64, head * 2 > chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
        return out
    }
}
