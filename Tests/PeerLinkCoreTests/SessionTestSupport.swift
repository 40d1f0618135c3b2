import XCTest
import DocVectors
import PeerLinkWire
@testable import PeerLinkCore

/// Two `SessionCore`s joined by an in-test "wire": every `.transmit` output is encoded,
/// decoded (exercising the codec) and queued for the other side on the same link id.
/// Time only moves when the test says so.
final class SessionPair {
    enum Side { case a, b }
    struct InFlight { let to: Side; let link: LinkID; let frame: Frame }

    var a: SessionCore
    var b: SessionCore
    var now: UInt64 = 0
    private var queue: [InFlight] = []
    private var head = 0
    var eventsA: [SessionEvent] = []
    var eventsB: [SessionEvent] = []
    var sentByA: [(at: UInt64, link: LinkID, frame: Frame)] = []
    var sentByB: [(at: UInt64, link: LinkID, frame: Frame)] = []
    /// Frames on these links are lost (transmitted into the void).
    var cut: Set<LinkID> = []
    /// Links whose frames wait (in order, nothing lost) until `release(_:)`: a stalled link.
    var held: Set<LinkID> = []
    private var heldFrames: [InFlight] = []
    /// Links on which frames travel only from A to B (B's answers are lost).
    var oneWayToB: Set<LinkID> = []
    /// Links on which frames travel only from B to A (A's frames are lost).
    var oneWayToA: Set<LinkID> = []

    init(a: SessionConfig = SessionConfig(), b: SessionConfig = SessionConfig()) {
        self.a = SessionCore(role: .initiator, config: a)
        self.b = SessionCore(role: .responder, config: b)
    }

    var pending: Int { queue.count - head }

    func collect(file: StaticString = #filePath, line: UInt = #line) {
        for o in a.takeOutputs() { take(o, from: .a, file: file, line: line) }
        for o in b.takeOutputs() { take(o, from: .b, file: file, line: line) }
    }

    private func take(_ o: SessionOutput, from side: Side, file: StaticString, line: UInt) {
        switch o {
        case let .transmit(link, frame):
            let wire = frame.encode()
            XCTAssertLessThanOrEqual(wire.count, WireLimits.frame, file: file, line: line)
            let decoded: Frame
            do { decoded = try Frame.decode(wire) } catch {
                XCTFail("frame \(frame) did not decode: \(error)", file: file, line: line)
                return
            }
            XCTAssertEqual(decoded, frame, file: file, line: line)
            if side == .a {
                sentByA.append((now, link, decoded))
                queue.append(InFlight(to: .b, link: link, frame: decoded))
            } else {
                sentByB.append((now, link, decoded))
                queue.append(InFlight(to: .a, link: link, frame: decoded))
            }
        case let .event(e):
            if side == .a { eventsA.append(e) } else { eventsB.append(e) }
        }
    }

    func up(_ link: LinkID) { a.linkUp(link, now: now); b.linkUp(link, now: now); collect() }
    func down(_ link: LinkID) { a.linkDown(link); b.linkDown(link); collect() }

    /// Loses everything in flight on `link`.
    func dropInFlight(on link: LinkID) {
        collect()
        let rest = queue[head...].filter { $0.link != link }
        queue = Array(rest); head = 0
    }

    /// Ends a stall: what `link` held is delivered first, in the order it was sent.
    func release(_ link: LinkID) {
        collect()
        held.remove(link)
        let mine = heldFrames.filter { $0.link == link }
        heldFrames.removeAll { $0.link == link }
        queue = mine + queue[head...]
        head = 0
    }

    /// Delivers queued frames in order (and whatever they cause) until none are left or
    /// `limit` frames have been delivered. Returns the number delivered.
    @discardableResult
    func run(limit: Int = .max) -> Int {
        collect()
        var n = 0
        while head < queue.count, n < limit {
            let f = queue[head]
            head += 1
            if head > 4096 { queue.removeFirst(head); head = 0 }
            if cut.contains(f.link) { continue }
            if held.contains(f.link) { heldFrames.append(f); continue }
            if f.to == .a, oneWayToB.contains(f.link) { continue }
            if f.to == .b, oneWayToA.contains(f.link) { continue }
            switch f.to {
            case .a: a.receive(f.frame, on: f.link, now: now)
            case .b: b.receive(f.frame, on: f.link, now: now)
            }
            collect()
            n += 1
        }
        return n
    }

    /// Runs to quiescence, with timer ticks (no time passes) so delayed acks go out.
    func settle(file: StaticString = #filePath, line: UInt = #line) {
        for _ in 0..<100_000 {
            let n = run()
            a.tick(now: now); b.tick(now: now)
            collect()
            if n == 0, pending == 0 { return }
        }
        XCTFail("the session pair did not settle", file: file, line: line)
    }

    /// Moves the clock forward in `step`s, ticking both sides and (optionally) delivering.
    func advance(by ms: UInt64, step: UInt64 = 100, deliver: Bool = true) {
        let end = now + ms
        while now < end {
            now = min(now + step, end)
            a.tick(now: now); b.tick(now: now)
            collect()
            if deliver { run() }
        }
    }

    var reliableMessagesB: [[UInt8]] { eventsB.compactMap { if case let .message(m, true) = $0 { return m }; return nil } }
    var reliableMessagesA: [[UInt8]] { eventsA.compactMap { if case let .message(m, true) = $0 { return m }; return nil } }
    var unreliableMessagesB: [[UInt8]] { eventsB.compactMap { if case let .message(m, false) = $0 { return m }; return nil } }

    static func violations(_ events: [SessionEvent]) -> [String] {
        events.compactMap { if case let .protocolViolation(s) = $0 { return s }; return nil }
    }
}


func message(_ i: Int, size: Int) -> [UInt8] {
    var m = [UInt8](repeating: 0, count: size)
    for j in 0..<size { m[j] = UInt8(truncatingIfNeeded: i &* 31 &+ j &* 7) }
    if size >= 4 { m[0] = UInt8(i >> 24 & 0xff); m[1] = UInt8(i >> 16 & 0xff); m[2] = UInt8(i >> 8 & 0xff); m[3] = UInt8(i & 0xff) }
    return m
}
