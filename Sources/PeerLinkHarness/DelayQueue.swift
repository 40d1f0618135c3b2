/// The sans-I/O heart of the labs' shaping relay: bytes that arrived at some time leave after
/// the link's serialisation at `bytesPerSecond` (0 = unlimited) plus `delay`, in order, and at
/// most `limit` bytes wait at once (a full queue stops reading, so TCP's flow control still
/// reaches the sender). Times and the delay are microseconds on any monotonic clock.
struct DelayQueue {
    let delay: Int
    let bytesPerSecond: Int
    let limit: Int
    private var chunks: [(due: Int, bytes: [UInt8])] = []
    private var head = 0
    private(set) var queued = 0
    /// When the emulated link finishes sending what it has (µs, fractional).
    private var busyUntil = 0.0

    /// `limit` defaults to 4 MiB unlimited, else a quarter of a second at the rate (at least
    /// 16 KiB): a link's buffer, not a place where seconds of data hide.
    init(delay: Int, bytesPerSecond: Int = 0, limit: Int? = nil) {
        precondition(delay >= 0 && bytesPerSecond >= 0 && (limit ?? 1) > 0)
        self.delay = delay
        self.bytesPerSecond = bytesPerSecond
        self.limit = limit ?? (bytesPerSecond > 0 ? max(16 << 10, bytesPerSecond / 4) : 4 << 20)
    }

    /// Whether a reader may take more bytes now.
    var hasRoom: Bool { queued < limit }
    var isEmpty: Bool { head == chunks.count }

    /// Bytes read at `now` leave once the link has sent them (after what it already had) and
    /// `delay` has passed.
    mutating func push(_ bytes: [UInt8], at now: Int) {
        guard !bytes.isEmpty else { return }
        var sent = Double(now)
        if bytesPerSecond > 0 {
            busyUntil = max(busyUntil, Double(now)) + Double(bytes.count) * 1_000_000 / Double(bytesPerSecond)
            sent = busyUntil
        }
        chunks.append((Int(sent.rounded(.up)) + delay, bytes))
        queued += bytes.count
    }

    /// How many bytes a reader should take at once: about 10 ms of the link's rate (whole
    /// 64 KiB reads would leave in bursts).
    var readSize: Int { bytesPerSecond > 0 ? min(65536, max(1024, bytesPerSecond / 100)) : 65536 }

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
