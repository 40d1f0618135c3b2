import XCTest
import TestKit
import PeerLinkWire
@testable import PeerLinkCore

/// `SessionCore.nextDeadline`: a driver that ticks only when the core says it must misses
/// nothing a driver ticking every millisecond would do, and sleeps through idle time.
final class SessionDeadlineTests: XCTestCase {
    /// Two cores joined by links with a one-way delay each, driven only by their deadlines,
    /// frame deliveries and the application's sends: a discrete-event run.
    struct Run {
        struct Flight { let at: UInt64; let order: Int; let toB: Bool; let link: LinkID; let frame: Frame }
        var a = SessionCore(role: .initiator), b = SessionCore(role: .responder)
        var now: UInt64 = 0
        var delay: [LinkID: UInt64]
        var cut: Set<LinkID> = []
        var flights: [Flight] = []
        var order = 0
        var eventsA: [SessionEvent] = [], eventsB: [SessionEvent] = []
        var ticksA = 0, ticksB = 0
        var rng: SplitMix64
        var missed: [String] = []

        init(delay: [LinkID: UInt64], seed: UInt64) {
            self.delay = delay
            rng = SplitMix64(seed: seed)
            for l in delay.keys.sorted() { a.linkUp(l, now: 0); b.linkUp(l, now: 0) }
            collect()
        }

        mutating func collect() {
            for o in a.takeOutputs() { take(o, fromA: true) }
            for o in b.takeOutputs() { take(o, fromA: false) }
        }

        mutating func take(_ o: SessionOutput, fromA: Bool) {
            switch o {
            case let .transmit(link, frame):
                guard !cut.contains(link) else { return }
                order += 1
                flights.append(Flight(at: now + (delay[link] ?? 0), order: order, toB: fromA, link: link, frame: frame))
            case let .event(e):
                if fromA { eventsA.append(e) } else { eventsB.append(e) }
            }
        }

        /// Ticking a copy of `core` anywhere before its deadline must do nothing but an early
        /// acknowledgement: otherwise the deadline came too late.
        mutating func checkNothingBefore(_ core: SessionCore, _ side: String) {
            guard let d = core.nextDeadline(now: now), d > now + 1 else { return }
            let t = now + 1 + rng.next() % (d - now - 1)
            var copy = core
            copy.tick(now: t)
            let done = copy.takeOutputs().filter {
                if case .transmit(_, .ack) = $0 { return false }
                if case .transmit(_, .bulkAck) = $0 { return false }
                return true
            }
            if !done.isEmpty { missed.append("\(side) at \(t) (deadline \(d), now \(now)): \(done)") }
        }

        /// Runs until `end`, calling `app` at each step with the time.
        mutating func run(until end: UInt64, sendEvery: UInt64 = 0, from start: UInt64 = 0, messages: inout Int, limit: Int) {
            var nextSend: UInt64? = sendEvery > 0 ? start : nil
            while now < end {
                checkNothingBefore(a, "A")
                checkNothingBefore(b, "B")
                let candidates = [flights.map(\.at).min(), a.nextDeadline(now: now), b.nextDeadline(now: now), nextSend].compactMap { $0 }
                guard let next = candidates.min(), next <= end else { now = end; break }
                now = max(now, next)
                if let i = flights.indices.filter({ flights[$0].at <= now }).min(by: { flights[$0].order < flights[$1].order }) {
                    let f = flights.remove(at: i)
                    if !cut.contains(f.link) {
                        if f.toB { b.receive(f.frame, on: f.link, now: now) } else { a.receive(f.frame, on: f.link, now: now) }
                    }
                } else if let s = nextSend, s <= now {
                    if messages < limit {
                        try? a.send(Array("message \(messages)".utf8), reliable: true, now: now)
                        messages += 1
                    }
                    nextSend = messages < limit ? now + sendEvery : nil
                } else {
                    if let d = a.nextDeadline(now: now), d <= now { a.tick(now: now); ticksA += 1 }
                    if let d = b.nextDeadline(now: now), d <= now { b.tick(now: now); ticksB += 1 }
                }
                collect()
            }
        }

        var delivered: [String] {
            eventsB.compactMap { if case let .message(m, true) = $0 { return String(decoding: m, as: UTF8.self) }; return nil }
        }
    }

    func testAnIdleLinkWakesOnlyForItsKeepalives() {
        var r = Run(delay: [1: 20], seed: 1)
        XCTAssertEqual(r.a.nextDeadline(now: 0), 1000, "an idle link's first wake is its keepalive")
        var n = 0
        r.run(until: 60_000, messages: &n, limit: 0)
        XCTAssertEqual(r.missed, [])
        XCTAssertFalse(r.eventsA.contains { if case .linkDead = $0 { return true }; return false }, "the idle link died")
        XCTAssertTrue(r.eventsA.contains { if case .roundTrip = $0 { return true }; return false }, "no keepalive round trip")
        // Pings every second and the odd probe bookkeeping: a few wakes a second, not 4–40.
        XCTAssertLessThan(r.ticksA, 60 * 3, "A woke \(r.ticksA) times in 60 s of idle link")
        XCTAssertGreaterThan(r.ticksA, 30, "A woke too seldom to keep the link alive")
    }

    func testADeadlineDrivenSessionMissesNothingAndDeliversEverything() {
        for seed in UInt64(1)...5 {
            var r = Run(delay: [1: 25, 2: 3], seed: seed)
            var n = 0
            r.run(until: 20_000, sendEvery: 7, from: 100, messages: &n, limit: 2000)
            XCTAssertEqual(r.missed, [], "seed \(seed)")
            XCTAssertEqual(r.delivered, (0..<2000).map { "message \($0)" }, "seed \(seed)")
        }
    }

    func testASilentCarrierIsSuspectedAndDeclaredDeadOnTime() {
        var r = Run(delay: [1: 25, 2: 3], seed: 9)
        r.a.preferredLink = 2  // the fast link carries
        r.b.preferredLink = 2
        var n = 0
        r.run(until: 2000, sendEvery: 10, from: 100, messages: &n, limit: 1000)
        r.cut = [2]  // the fast link goes silent; frames on it vanish
        let cutAt = r.now
        r.run(until: 12_000, sendEvery: 10, from: r.now, messages: &n, limit: 1000)
        XCTAssertEqual(r.missed, [])
        XCTAssertEqual(r.delivered, (0..<1000).map { "message \($0)" }, "messages were lost or reordered after the cut")
        XCTAssertTrue(r.eventsA.contains { if case .linkSuspected(2, _) = $0 { return true }; return false }, "the silent link was not suspected")
        let deadAt = r.eventsA.firstIndex { if case .linkDead(2) = $0 { return true }; return false }
        XCTAssertNotNil(deadAt, "the silent link was never declared dead")
        XCTAssertGreaterThan(r.now, cutAt + r.a.config.deadAfterMillis)
    }
}
