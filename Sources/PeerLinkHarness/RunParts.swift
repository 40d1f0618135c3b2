import Foundation
import PeerLink
import PeerLinkTesting

/// The pieces every run is made of, whichever backend drives it: the in-process runner
/// (memory, btlab) and the IP lab's agents use the same sender, receiver and sampler, so a
/// scenario means the same traffic and the same measurements everywhere.
enum RunParts {
    /// The senders of a run: one task per `[[traffic]]`, what the message streams sent, and
    /// the sizes of the resources offered.
    struct Senders {
        var tasks: [Task<Void, Never>]
        var tally: SendTally
        var resourceSizes: [Int]

        /// The sender's side of each message stream (arrivals are the receiver's to fill).
        func sentStreams() -> [RunRecord.MessageStream] {
            (0..<tally.streamCount).map { i in
                let (sent, failed) = tally.counts(i)
                return RunRecord.MessageStream(sent: sent, failedSends: failed, arrivals: [], arrivalTimes: [])
            }
        }
    }

    /// Starts the scenario's traffic from `session` to `peer` on `clock`: message streams at
    /// their rate, resources (deterministic content, written to `dir`) at their start time.
    /// `error` is told about a resource that failed to send.
    static func send(_ scenario: Scenario, over session: Session, to peer: PeerID, clock: RunClock, dir: String,
                     error: @escaping @Sendable (String) -> Void) throws -> Senders {
        try send(scenario, session: { _ in session }, peer: { _ in peer }, clock: clock, dir: dir, error: error)
    }

    /// The same for scenarios of several nodes: each traffic goes from `session(t)` to `peer(t)`.
    static func send(_ scenario: Scenario, session sessionOf: (Scenario.Traffic) -> Session?, peer peerOf: (Scenario.Traffic) -> PeerID?,
                     clock: RunClock, dir: String, error: @escaping @Sendable (String) -> Void) throws -> Senders {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var tasks: [Task<Void, Never>] = []
        let tally = SendTally(streams: scenario.traffic.filter { $0.kind == .messages }.count)
        var resourceSizes: [Int] = []
        var streamIndex = 0
        for t in scenario.traffic {
            guard let session = sessionOf(t), let peer = peerOf(t) else { throw AgentError("no node \(t.from) or \(t.to) in the run") }
            switch t.kind {
            case .messages:
                let index = UInt32(streamIndex)
                streamIndex += 1
                tasks.append(Task {
                    await clock.sleep(until: t.start)
                    let spacing = t.rate > 0 ? 1000.0 / Double(t.rate) : 0
                    for seq in 0..<t.count {
                        if Task.isCancelled { return }
                        if spacing > 0 { await clock.sleep(until: t.start + Int(Double(seq) * spacing)) }
                        do {
                            try await session.send(Receiver.payload(stream: index, seq: UInt32(seq), size: t.size), to: [peer])
                            tally.sent(Int(index))
                        } catch {
                            tally.failed(Int(index))
                        }
                    }
                })
            case .resource:
                resourceSizes.append(t.size)
                let path = dir + "/resource-\(resourceSizes.count).bin"
                guard FileManager.default.createFile(atPath: path, contents: Data(resourceContent(size: t.size))) else {
                    throw AgentError("cannot write the resource to send at \(path)")
                }
                tasks.append(Task {
                    await clock.sleep(until: t.start)
                    do { try await session.sendResource(at: path, to: peer) } catch let e { error("resource: \(e)") }
                })
            }
        }
        return Senders(tasks: tasks, tally: tally, resourceSizes: resourceSizes)
    }

    /// A resource's content: xorshift32 from a fixed seed, the same in every backend.
    static func resourceContent(size: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        var x: UInt32 = 2463534242
        for i in bytes.indices { x ^= x << 13; x ^= x >> 17; x ^= x << 5; bytes[i] = UInt8(truncatingIfNeeded: x) }
        return bytes
    }

    /// Records what `session` receives (reliable messages, resources accepted into `inbox`)
    /// until the task is cancelled or the session ends.
    static func receive(_ session: Session, into receiver: Receiver, inbox: String,
                        other: @escaping @Sendable (Session.Event) -> Void = { _ in }) -> Task<Void, Never> {
        Task {
            for await e in session.events {
                other(e)
                switch e {
                case let .message(_, bytes, .reliable): receiver.message(bytes)
                case let .resourceOffered(offer): try? await session.accept(offer, into: inbox)
                case let .resourceFinished(p, path, error) where p.direction == .receiving:
                    receiver.resource(size: Int(p.total), verified: path != nil && error == nil, resumedFrom: p.resumedFrom, error: error.map(String.init(describing:)))
                default: break
                }
            }
        }
    }

    /// Samples, every `intervalMs` until `duration`, which links of `session`'s peer are up and
    /// which carry each role (control left out); `name` maps a link to the scenario's name
    /// for it. Returns (link up spans, carrier spans).
    static func sampleCarriers(_ session: Session, peer: PeerID? = nil, clock: RunClock, duration: Int, intervalMs: Int,
                               name: @escaping @Sendable (LinkSnapshot) -> String?) -> Task<([RunRecord.Span], [RunRecord.Span]), Never> {
        Task {
            var up = SpanBuilder(), carriers = SpanBuilder()
            while !Task.isCancelled, clock.now < duration {
                let t = clock.now
                let peers = await session.links()
                let snapshot = (peer.map { p in peers.first { $0.peer == p } } ?? peers.first)?.links ?? []
                up.sample(Set(snapshot.compactMap { s in name(s).map { SpanBuilder.Pair(link: $0, role: nil) } }), at: t)
                carriers.sample(Set(snapshot.flatMap { s in
                    (name(s).map { n in
                        s.carries.filter { $0 != LinkRole.control.rawValue }.map { SpanBuilder.Pair(link: n, role: $0) }
                    }) ?? []
                }), at: t)
                try? await VirtualTime.sleep(for: .milliseconds(intervalMs))
            }
            let end = clock.now
            return (up.close(at: end), carriers.close(at: end))
        }
    }
}
