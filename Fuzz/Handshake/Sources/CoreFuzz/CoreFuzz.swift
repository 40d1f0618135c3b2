// libFuzzer target: the sans-I/O core driven by hostile input — a peer's frames, the time, the
// application's calls and links coming and going, in whatever order the input says. Built by
// scripts/fuzz.sh through Fuzz/Handshake/Package.swift, as HandshakeFuzz is.
//
// The input is a program: each operation is one byte (its low 4 bits pick the operation) and
// the bytes it reads after it. Two session cores talk through an in-memory wire (honest
// frames from each other) while the fuzzer may also inject frames of its own making into B,
// decoded from its bytes; an invitation desk and a path upkeep get the same treatment.
// Invariants beyond "no crash":
//  - a core's next deadline is never before the time it is asked at (nor in the past of the
//    desk's or the upkeep's);
//  - A's reliable messages reach B at most once and in order (whatever B is fed besides);
//  - the desk never has a negative number of invitations pending, nor more than its limit;
//  - the upkeep never dials a path it was not given, nor one it is dialling already.
import PeerLinkCore
import PeerLinkWire
#if canImport(Glibc)
import Glibc
#endif

fileprivate func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { fatalError("invariant violated: \(what())") }
}

fileprivate struct Reader {
    var bytes: UnsafeBufferPointer<UInt8>
    var at = 0
    var done: Bool { at >= bytes.count }
    mutating func u8() -> UInt8 { defer { at += 1 }; return at < bytes.count ? bytes[at] : 0 }
    mutating func u16() -> Int { Int(u8()) << 8 | Int(u8()) }
    mutating func take(_ n: Int) -> [UInt8] {
        let start = min(at, bytes.count), end = min(bytes.count, start + n)
        defer { at = end }
        return Array(bytes[start..<end])
    }
}

fileprivate func run(_ input: UnsafeBufferPointer<UInt8>) {
    var r = Reader(bytes: input)
    var a = SessionCore(role: .initiator), b = SessionCore(role: .responder)
    a.sharedMinor = 3
    b.sharedMinor = 3
    var now: UInt64 = 0
    var wire: [(toB: Bool, link: LinkID, frame: Frame)] = []
    var up: Set<LinkID> = []
    var sent = 0
    var received: [Int] = []
    var desk = InvitationDesk(maxPending: 4)
    var upkeep = PathUpkeep()
    let peers = [PeerID(publicKey: [1] + [UInt8](repeating: 0, count: 31)), PeerID(publicKey: [2] + [UInt8](repeating: 0, count: 31))]

    func collect() {
        for o in a.takeOutputs() { if case let .transmit(l, f) = o { wire.append((true, l, f)) } }
        for o in b.takeOutputs() {
            switch o {
            case let .transmit(l, f): wire.append((false, l, f))
            case let .event(.message(m, true)) where m.count >= 4 && m[0] == 0xA5:
                received.append(Int(m[1]) << 16 | Int(m[2]) << 8 | Int(m[3]))
            default: break
            }
        }
    }
    func deadlines() {
        for core in [a, b] { if let d = core.nextDeadline(now: now) { check(d >= now, "deadline \(d) before now \(now)") } }
        if let d = upkeep.nextDeadline(now: now) { check(d >= now, "upkeep deadline \(d) before now \(now)") }
    }

    var steps = 0
    while !r.done, steps < 2000 {
        steps += 1
        switch r.u8() & 0x0F {
        case 0:  // a link comes up on both sides
            let l = LinkID(r.u8() % 3 + 1)
            if up.insert(l).inserted { a.linkUp(l, now: now); b.linkUp(l, now: now) }
        case 1:  // a link goes down
            let l = LinkID(r.u8() % 3 + 1)
            if up.remove(l) != nil { a.linkDown(l); b.linkDown(l) }
        case 2:  // time passes; both tick at their deadlines within it
            let end = now + UInt64(r.u16())
            while let d = [a.nextDeadline(now: now), b.nextDeadline(now: now)].compactMap({ $0 }).min(), d <= end {
                now = max(now, d)
                a.tick(now: now); b.tick(now: now)
                collect()
            }
            now = end
        case 3:  // the application sends a numbered reliable message from A
            let n = sent
            if (try? a.send([0xA5, UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + r.take(Int(r.u8())), reliable: true, now: now)) != nil {
                sent += 1
            }
        case 4:  // deliver the next honest frames (some of them are lost)
            for _ in 0..<Int(r.u8() % 16) where !wire.isEmpty {
                let f = wire.removeFirst()
                guard up.contains(f.link) else { continue }
                if r.u8() & 0x0F == 0 { continue }  // lost
                if f.toB { b.receive(f.frame, on: f.link, now: now) } else { a.receive(f.frame, on: f.link, now: now) }
                collect()
            }
        case 5:  // a frame of the fuzzer's making, to B
            let l = LinkID(r.u8() % 3 + 1)
            if let f = try? Frame.decode(r.take(r.u16() % 1024)), up.contains(l) {
                // Injected reliable records would make "A's messages once" unjudgeable.
                switch f {
                case .reliable, .bulk: break
                default: b.receive(f, on: l, now: now)
                }
            }
        case 6:  // streams and resources from A, and B's answers
            let op = r.u8() % 6
            switch op {
            case 0: _ = try? a.openStream(name: "s\(r.u8())", now: now)
            case 1: _ = try? a.offerResource(name: "f", size: UInt64(r.u16()), sha256: [UInt8](repeating: 1, count: 32), now: now)
            case 2: try? a.write(r.take(Int(r.u8())), to: UInt32(r.u8() % 8), now: now)
            case 3: try? b.acceptResource(UInt32(r.u8() % 8), offset: 0, now: now)
            case 4: b.refuseResource(UInt32(r.u8() % 8), error: .noSpace(needed: 10, available: 1, margin: 5), now: now)
            default: b.consumed(Int(r.u8()), of: UInt32(r.u8() % 8), now: now)
            }
        case 7:  // B's reader falls behind or catches up
            b.acknowledgementsPaused = r.u8() & 1 == 1
        case 8:  // an incoming link's first frame at the desk
            let f = (try? Frame.decode(r.take(Int(r.u8())))) ?? .invite(id: 1, timeoutMillis: UInt32(r.u16()), context: [])
            let flags = r.u8()
            let c = InvitationDesk.Context(localPeer: peers[Int(flags & 1)], remotePeer: peers[Int(flags >> 1 & 1)],
                                           remoteToken: [flags], joiningToken: flags & 4 == 0 ? nil : [flags & 0xF8],
                                           inSessionWithSameIncarnation: flags & 8 != 0, inviting: flags & 16 != 0,
                                           hasHandler: flags & 32 != 0)
            if case .ask = desk.decide(first: f, c) {}
            if flags & 64 != 0 { desk.answered() }
            check(desk.pending >= 0 && desk.pending <= desk.maxPending, "desk pending \(desk.pending)")
        case 9:  // paths: set, link, fail, lose
            let op = r.u8() % 5
            let names = ["a", "b", "c", "d"]
            switch op {
            case 0: upkeep.setPaths(Array(names.prefix(Int(r.u8() % 5))))
            case 1:
                let due = upkeep.due(now: now)
                check(Set(due).isSubset(of: Set(upkeep.paths)), "dials a path it was not given")
                check(Set(due).count == due.count, "dials a path twice")
                check(upkeep.due(now: now).isEmpty, "dials a path it is dialling already")
            case 2: upkeep.linked(names[Int(r.u8() % 4)], LinkID(r.u8()))
            case 3: _ = upkeep.dialFailed(names[Int(r.u8() % 4)], now: now)
            default: upkeep.linkDown(LinkID(r.u8()))
            }
        default:
            collect()
        }
        collect()
        deadlines()
    }
    check(received == received.sorted() && Set(received).count == received.count, "A's messages out of order or twice: \(received.prefix(20))")
    check(received.allSatisfy { $0 < sent }, "a message arrived that A never sent")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    run(UnsafeBufferPointer(start: data, count: size))
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
fileprivate func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

@main
enum CoreFuzzMain {
    static func main() {
        // `CoreFuzz --write-seeds DIR`: programs that bring links up, send, deliver and tick.
        if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--write-seeds" {
            let seeds: [[UInt8]] = [
                [0, 0, 3, 4, 3, 4, 4, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0, 200, 4, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1],
                [0, 0, 0, 1, 3, 10, 3, 20, 4, 15, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 2, 4, 0, 4, 15],
                [0, 0, 6, 1, 1, 0, 6, 3, 1, 4, 8, 1, 1, 1, 1, 1, 1, 1, 1, 2, 13, 136, 4, 8, 1, 1, 1, 1, 1, 1, 1, 1],
                [9, 0, 4, 9, 1, 9, 3, 1, 9, 1, 2, 0, 100, 9, 1, 8, 0, 0, 40, 8, 0, 0, 37, 8, 0, 0, 96],
            ]
            for (n, bytes) in seeds.enumerated() {
                guard let f = fopen("\(CommandLine.arguments[2])/seed-\(n)", "wb") else { fatalError("cannot write seeds") }
                _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, f) }
                fclose(f)
            }
            return
        }
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, { data, size in fuzz(data, size) }))
    }
}
