import Foundation
import PeerLink

/// `peerlink-bench handover-recv|handover-send`: the PeerLink half of scripts/bench-handover.sh.
/// The sender streams fixed-size reliable messages at a fixed rate over a session that has a
/// TCP link on each of two paths; the receiver records when each arrived and prints the
/// largest delivery gap, losses, duplicates and reorderings as one JSON line. Messages carry
/// a sequence number; both ends run on one host (namespaces), so their clocks agree.
enum HandoverBench {
    /// handover-recv BIND-ADDRESS PORT ID-FILE SECONDS [copy]
    static func receive(_ args: [String]) async throws {
        guard args.count == 4 || (args.count == 5 && args[4] == "copy"), let port = UInt16(args[1]), let seconds = Double(args[3]) else {
            print("usage: peerlink-bench handover-recv BIND-ADDRESS PORT ID-FILE SECONDS [copy]"); exit(2)
        }
        let node = try Node(identity: Identity(), displayName: "receiver", transports: [TCPTransport(bindHost: args[0])], datagrams: false)
        let session = Session(node: node, policy: policy(copy: args.count == 5))
        let advertiser = Advertiser(node: node, service: try ServiceType("handover"), discovery: NoDiscovery())
        _ = try await node.start(port: port)
        try await advertiser.start()
        Task { for await i in advertiser.invitations { i.accept(into: session) } }
        try node.peerID.description.write(toFile: args[2], atomically: true, encoding: .utf8)
        let box = ArrivalBox()
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        Task {
            for await e in session.events {
                if case let .message(_, bytes, .reliable) = e, bytes.count >= 8 {
                    box.add(bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }, DispatchTime.now().uptimeNanoseconds / 1000)
                }
            }
        }
        while DispatchTime.now().uptimeNanoseconds < deadline { try await Task.sleep(nanoseconds: 100_000_000) }
        let arrivals = box.all
        print(Stats(arrivals, endMicros: DispatchTime.now().uptimeNanoseconds / 1000).json)
    }

    /// handover-send PEER-ID-FILE HOST1 HOST2 PORT RATE SECONDS [copy]
    ///
    /// With `copy`, both ends use the default policy with message copies on the second link.
    static func send(_ args: [String]) async throws {
        guard args.count == 6 || (args.count == 7 && args[6] == "copy"), let port = UInt16(args[3]), let rate = Double(args[4]), let seconds = Double(args[5]),
              let idText = try? String(contentsOfFile: args[0], encoding: .utf8), let peer = try? PeerID(parsing: idText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            print("usage: peerlink-bench handover-send PEER-ID-FILE HOST1 HOST2 PORT RATE SECONDS [copy]"); exit(2)
        }
        let node = try Node(identity: Identity(), displayName: "sender", transports: [TCPTransport()], datagrams: false)
        let session = Session(node: node, policy: policy(copy: args.count == 7))
        let info = PeerInfo(peerID: peer, displayName: "receiver", info: [:], endpoints: [
            TransportEndpoint(medium: .tcp, host: args[1], port: port), TransportEndpoint(medium: .tcp, host: args[2], port: port)])
        try await node.invite(info, to: session, timeout: .seconds(10))
        // Wait for the second path's link (the link manager adds it).
        for _ in 0..<100 where (await session.links()).first?.links.count ?? 0 < 2 { try await Task.sleep(nanoseconds: 50_000_000) }
        let links = (await session.links()).first?.links.count ?? 0
        FileHandle.standardError.write(Data("sender: \(links) links\n".utf8))
        Task { for await e in session.events { if case let .carrierChanged(_, link, role, reason) = e, role == .reliable {
            FileHandle.standardError.write(Data("sender: at \(DispatchTime.now().uptimeNanoseconds / 1000) us reliable → link \(link): \(reason)\n".utf8)) } } }
        let count = Int(rate * seconds)
        let start = DispatchTime.now().uptimeNanoseconds
        var sent = 0
        var failure: String?
        for i in 0..<count {
            let due = start + UInt64(Double(i) / rate * 1e9)
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { try await Task.sleep(nanoseconds: due - now) }
            var m = [UInt8](repeating: 0, count: 64)
            for b in 0..<8 { m[b] = UInt8(truncatingIfNeeded: UInt64(i) >> (56 - 8 * b)) }
            do {
                try await session.send(m, to: [peer])
                sent += 1
            } catch {
                failure = "\(error)"
                break
            }
        }
        // What the receiver is judged against: how many were to be sent and when the stream
        // started (uptime, the receiver's clock too: both ends run on one host).
        let why = failure.map { ",\"error\":\"\(jsonEscaped($0))\"" } ?? ""
        print("{\"count\":\(count),\"sent\":\(sent),\"start_us\":\(start / 1000)\(why)}")
        fflush(nil)
        try await Task.sleep(nanoseconds: 2_000_000_000)
    }

    private static func policy(copy: Bool) -> LinkPolicy {
        var p = LinkPolicy()
        p.copyMessages = copy
        return p
    }
}

/// What the receiver saw of a sequence-numbered stream (same fields as
/// scripts/bench/mptcp_stream.py): how many arrived and how many distinct, duplicates,
/// reorderings, the largest gap between consecutive arrivals, and the first and last arrival
/// and the end of the receiver's watch (uptime µs). Whether everything arrived, and the gaps
/// before the first arrival and after the last, are judged against the sender's report
/// (scripts/bench-handover.sh): only the sender knows how many it sent and when it began.
struct Stats {
    let json: String
    init(_ arrivals: [(seq: UInt64, at: UInt64)], endMicros: UInt64) {
        var seen = Set<UInt64>(), dups = 0, reordered = 0, last: UInt64? = nil
        var gap: UInt64 = 0, gapAt: UInt64 = 0
        for (i, a) in arrivals.enumerated() {
            if !seen.insert(a.seq).inserted { dups += 1 }
            if let l = last, a.seq < l { reordered += 1 }
            last = max(last ?? 0, a.seq)
            if i > 0, a.at - arrivals[i - 1].at > gap { gap = a.at - arrivals[i - 1].at; gapAt = arrivals[i - 1].at }
        }
        let first = arrivals.first.map { "\($0.at)" } ?? "null", final = arrivals.last.map { "\($0.at)" } ?? "null"
        json = "{\"received\":\(arrivals.count),\"unique\":\(seen.count),\"duplicates\":\(dups),\"reordered\":\(reordered),"
            + "\"max_gap_ms\":\(String(format: "%.1f", Double(gap) / 1000)),\"gap_at_us\":\(gapAt),"
            + "\"first_us\":\(first),\"last_us\":\(final),\"end_us\":\(endMicros)}"
    }
}

/// `s` as the inside of a JSON string.
func jsonEscaped(_ s: String) -> String {
    var out = ""
    for ch in s.unicodeScalars {
        switch ch {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        default: out += ch.value < 0x20 ? String(format: "\\u%04x", ch.value) : String(ch)
        }
    }
    return out
}

/// Publishes nothing and finds nothing: the bench's receiver is dialled by address.
struct NoDiscovery: Discovery {
    struct Handle: DiscoveryHandle { func stop() {} }
    func publish(_ advertisement: Advertisement, service: ServiceType, ports: [Medium: UInt16],
                 notices: @escaping @Sendable (String) -> Void) throws -> DiscoveryHandle { Handle() }
    func browse(_ service: ServiceType, handler: @escaping @Sendable (DiscoveryEvent) -> Void) throws -> DiscoveryHandle { Handle() }
}

/// Arrivals recorded by the receiver's event loop.
final class ArrivalBox: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [(seq: UInt64, at: UInt64)] = []
    func add(_ seq: UInt64, _ at: UInt64) { lock.withLock { items.append((seq, at)) } }
    var all: [(seq: UInt64, at: UInt64)] { lock.withLock { items } }
}
