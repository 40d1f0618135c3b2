import Foundation
import PeerLinkCore
import PeerLinkWire

/// Resources (files) with one peer — PeerLink's first node-level service (PROTOCOL §10): the
/// offer, the receiver's space check and acceptance, the bytes within credit, the receiver's
/// writes and SHA-256 check, its verdict or refusal, and a cancel on either side. It lives
/// inside its peer channel and runs on the channel's actor (`PeerProtocolHandler`).
final class ResourceHandler: PeerProtocolHandler {
    /// Outgoing resources, by stream: the receiver's answers and how far the bytes went.
    private var outgoing: [UInt32: OutgoingResource] = [:]
    /// Why the receiver refused or stopped one of our outgoing resources (RESOURCE_ERROR),
    /// kept until the sending loop sees the stream cancelled behind it.
    private var refusals: [UInt32: ResourceError] = [:]
    // Incoming
    private var offers: [UInt32: ResourceOffer] = [:]
    private var receiving: [UInt32: IncomingFile] = [:]
    /// File bytes that arrived during this `process` pass, per resource: each file's writer
    /// gets them in one job with one completion (`flushFileBytes`), not one per record.
    private var unwritten: [UInt32: [ArraySlice<UInt8>]] = [:]

    struct IncomingFile {
        let offer: ResourceOffer
        let directory: String
        let writer: IncomingFileWriter
        /// The core's account of its bytes (taken, written, progress due).
        var account: IncomingResource
        /// Space promised to this file on its disk, released as it is written or dropped.
        let reservation: DiskReservation?
    }

    // MARK: the channel's events

    func handle(_ event: SessionEvent, in channel: isolated PeerChannel) -> Bool {
        switch event {
        case let .resourceOffered(id, name, size, sha):
            let offer = ResourceOffer(peer: channel.peer, stream: id, name: ResourceName.safe(name), size: size, sha256: sha)
            offers[id] = offer
            channel.session.emit(.resourceOffered(offer))
        case let .resourceOfferedKeyed(id, name, size, key):
            let offer = ResourceOffer(peer: channel.peer, stream: id, name: ResourceName.safe(name), size: size, sha256: nil, contentKey: key)
            offers[id] = offer
            channel.session.emit(.resourceOffered(offer))
        case let .resourceDigest(id, sha):
            if case let .unexpected(why)? = receiving[id]?.account.digestArrived(sha) {
                failResource(id, .unexpectedDigest(detail: why), in: channel)
            }
        case let .resourceAccepted(id, offset):
            outgoing[id]?.accepted(offset: offset)
        case let .resourceResult(id, ok):
            outgoing[id]?.verdict(ok: ok)
        case let .resourceError(id, reason):
            refusals[id] = reason
        case let .streamData(id, bytes):
            guard receiving[id] != nil else { return false }
            writeResource(id, bytes, in: channel)
            channel.upgrade.bulkActivity(now: Runtime.milliseconds())
        case let .streamClosed(id, status):
            flushFileBytes(in: channel)  // a file's last bytes go to its writer before its end
            if receiving[id] != nil {
                finishResource(id, status: status, in: channel)
            } else if offers.removeValue(forKey: id) == nil {
                return false  // not an incoming resource of ours
            }
        default:
            return false
        }
        return true
    }

    func passEnded(in channel: isolated PeerChannel) { flushFileBytes(in: channel) }

    func ended(reason: String, in channel: isolated PeerChannel) {
        flushFileBytes(in: channel)  // what arrived is kept for a resume
        for (_, f) in receiving {
            f.writer.close()
            channel.session.emit(.resourceFinished(progress(f, channel.peer), path: nil,
                                                   error: .disconnected(reason: reason)))
        }
        receiving.removeAll()
    }

    /// One line of state, for diagnosing a transfer that does not progress.
    func debugState(_ core: SessionCore) -> String {
        let inbound = receiving.map {
            "\($0.key): \($0.value.account.received)+\($0.value.account.queued)/\($0.value.offer.size) window \(core.window(of: $0.key) ?? 0)"
        }
        let outbound = outgoing.map { "\($0.key): \($0.value.phase) \($0.value.sent)/\($0.value.size)" }
        return "outgoing=\(outbound) offers=\(offers.keys.sorted()) receiving=\(inbound)"
    }

    // MARK: outgoing

    /// Offers the file at `path` as `name`, sends it from where the receiver has it, and waits
    /// for the receiver's SHA-256 verdict. When the digest is not known yet and the peer speaks
    /// protocol minor 4, the offer is keyed and the file is hashed as it is sent, the digest
    /// following the last byte; otherwise the file is hashed first and the offer carries it.
    func send(path: String, name: String, progress: (@Sendable (ResourceProgress) -> Void)?, in channel: isolated PeerChannel) async throws {
        let peer = channel.peer
        // A faster link is proposed before the file is hashed: forming a Wi-Fi Direct group
        // and hashing a large file on a Raspberry Pi take seconds each, and need not take
        // them one after the other.
        let identity = try FileIdentity(path: path)
        let size = identity.size
        guard !channel.ended else { throw PeerLinkError.notConnected(peer) }
        channel.bulkStarting("sending '\(name)' (\(ByteCount.text(size)))")
        let hasher = channel.core.sharedMinor >= 4 && !FileDigest.cache.isKnownOrRunning(identity) ? StreamingDigest() : nil
        var sha: [UInt8]?
        if hasher == nil {
            // Hashing runs off this actor (FileDigest), once per file content, so a retry after a
            // lost link does not hash again. Each progress step counts as bulk activity, so that
            // a long hash does not look like an idle upgraded link.
            let (hashedSize, digest) = try await FileDigest.sha256(ofFileAt: path) { [weak channel] done, total in
                progress?(ResourceProgress(peer: peer, name: name, direction: .sending, completed: done, total: total,
                                           resumedFrom: 0, stage: .hashing))
                Task { await channel?.bulkContinues() }
            }
            guard hashedSize == size else { throw PeerLinkError.file(FileFailure(path: path, .changedSize(from: size, to: hashedSize, during: .reading))) }
            sha = digest
        }
        let reader = try OutgoingFileReader(path: path)
        guard !channel.ended else { throw PeerLinkError.notConnected(peer) }
        let now = Runtime.milliseconds()
        let id: UInt32
        if let sha {
            id = try channel.core.offerResource(name: name, size: size, sha256: sha, now: now)
        } else {
            id = try channel.core.offerResource(name: name, size: size, key: identity.contentKey, now: now)
        }
        outgoing[id] = OutgoingResource(size: size, digestFollows: sha == nil)
        channel.process()
        defer { outgoing[id] = nil; refusals[id] = nil }
        func report(_ r: OutgoingResource) {
            progress?(ResourceProgress(peer: peer, name: name, direction: .sending, completed: r.sent, total: size, resumedFrom: r.start))
        }
        // The core's OutgoingResource decides each step; this loop reads, writes and waits.
        var chunk: [UInt8] = []
        var used = 0
        var reported = false
        while true {
            guard !channel.ended else { throw PeerLinkError.notConnected(peer) }
            try cancelIfNeeded(id, in: channel)
            if channel.refused.contains(id) { outgoing[id]?.refused(refusals[id]) }
            guard let r = outgoing[id] else { throw PeerLinkError.notConnected(peer) }
            if r.phase == .sending, !reported { reported = true; report(r) }
            let step = r.next(credit: channel.core.credit(of: id) ?? 0,
                              backlogFull: channel.core.bulkBacklogBytes > channel.core.config.sendWindow,
                              readAhead: chunk.count - used)
            switch step {
            case .wait:
                await channel.waitForChange()
            case let .read(offset, count):
                // A hasher slower than the link holds a bounded number of chunks.
                if let hasher, hasher.isBehind { try await hasher.catchUp() }
                chunk = try await reader.read(at: offset, count: count)
                used = 0
                guard !chunk.isEmpty else { throw PeerLinkError.file(FileFailure(path: path, .changedSize(from: size, to: offset, during: .sending))) }
                hasher?.update(chunk)
            case let .skim(offset, count):
                // A resumed keyed resource: the receiver holds these bytes, the digest covers them.
                let bytes = try await reader.read(at: offset, count: count)
                guard bytes.count == count else {
                    throw PeerLinkError.file(FileFailure(path: path, .changedSize(from: size, to: offset + UInt64(bytes.count), during: .sending)))
                }
                hasher?.update(bytes)
                outgoing[id]?.skimmed(count)
                channel.upgrade.bulkActivity(now: Runtime.milliseconds())  // not an idle link meanwhile
                if let r = outgoing[id] {
                    progress?(ResourceProgress(peer: peer, name: name, direction: .sending, completed: r.skimmed, total: size,
                                               resumedFrom: r.start, stage: .hashing))
                }
            case .sendDigest:
                guard let hasher else { throw PeerLinkError.resourceFailed(.noDigest(name: name)) }
                let (hashed, digest) = try await hasher.finish()
                guard hashed == size else { throw PeerLinkError.file(FileFailure(path: path, .changedSize(from: size, to: hashed, during: .sending))) }
                sha = digest
                guard outgoing[id]?.phase == .sending else { continue }  // refused while hashing: the loop's top says how
                do {
                    try channel.core.sendResourceDigest(id, sha256: digest, now: Runtime.milliseconds())
                } catch {
                    if channel.refused.contains(id) || channel.ended { continue }
                    throw error
                }
                outgoing[id]?.sentDigest()
                channel.process()
            case let .write(n):
                try channel.core.write(chunk[used..<used + n], to: id, now: Runtime.milliseconds())
                channel.upgrade.bulkActivity(now: Runtime.milliseconds())
                used += n
                channel.process()
                if outgoing[id]?.wrote(n) == true, let r = outgoing[id] { report(r) }
            case .close:
                channel.core.close(stream: id, cancel: false, now: Runtime.milliseconds())
                outgoing[id]?.closed()
                channel.process()
            case .done:
                switch r.phase {
                case .finished(ok: true):
                    // Hashed while sending: a later send of the unchanged file offers the digest at once.
                    if r.digestFollows, let sha, (try? FileIdentity(path: path)) == identity { FileDigest.cache.remember(sha, for: identity) }
                    let done = ResourceProgress(peer: peer, name: name, direction: .sending, completed: r.sent, total: size, resumedFrom: r.start)
                    channel.session.emit(.resourceFinished(done, path: path, error: nil))
                    return
                case .finished(ok: false):
                    let done = ResourceProgress(peer: peer, name: name, direction: .sending, completed: r.sent, total: size, resumedFrom: r.start)
                    channel.session.emit(.resourceFinished(done, path: path, error: .digestMismatch(name: name, direction: .sending)))
                    throw PeerLinkError.resourceFailed(.digestMismatch(name: name, direction: .sending))
                case let .refused(reason?):
                    throw PeerLinkError.resourceRefused(name: name, reason: reason)
                default:
                    throw r.wasAccepted ? PeerLinkError.resourceFailed(.cancelledByReceiver(name: name)) : PeerLinkError.resourceDeclined(name)
                }
            }
        }
    }

    /// The receiver's reason for refusing or stopping resource `id`, if it gave one.
    private func refusal(of id: UInt32, _ name: String) -> PeerLinkError? {
        refusals[id].map { PeerLinkError.resourceRefused(name: name, reason: $0) }
    }

    /// Aborts an outgoing resource when the sending task was cancelled.
    private func cancelIfNeeded(_ id: UInt32, in channel: isolated PeerChannel) throws {
        guard Task.isCancelled else { return }
        channel.core.close(stream: id, cancel: true, now: Runtime.milliseconds())
        channel.process()
        throw CancellationError()
    }

    // MARK: incoming

    /// Stops receiving a resource; the partial file is kept so a later transfer can resume.
    func cancelIncoming(_ offer: ResourceOffer, in channel: isolated PeerChannel) {
        if offers.removeValue(forKey: offer.stream) != nil {
            channel.core.close(stream: offer.stream, cancel: true, now: Runtime.milliseconds())
            channel.process()
        } else if receiving[offer.stream] != nil {
            failResource(offer.stream, .cancelledByReceiver(name: offer.name), in: channel)
            channel.process()
        }
    }

    /// Where the bytes of a resource with this SHA-256 wait in `directory` until they verify
    /// (named by the content, so a later offer of the same bytes resumes from them).
    static func partialPath(in directory: String, sha256: [UInt8]) -> String {
        partialPath(in: directory, named: ResourcePartName.forDigest(sha256))
    }

    /// Where the bytes of `offer` wait in `directory`: named by its SHA-256, or for a keyed
    /// offer by its sender and content key (PROTOCOL §11.7).
    static func partialPath(in directory: String, for offer: ResourceOffer) -> String {
        if let sha = offer.sha256 { return partialPath(in: directory, sha256: sha) }
        return partialPath(in: directory, named: ResourcePartName.forKey(offer.contentKey ?? [], from: offer.peer))
    }

    private static func partialPath(in directory: String, named file: String) -> String {
        ((directory as NSString).appendingPathComponent(".peerlink-partial") as NSString).appendingPathComponent(file)
    }

    /// The space check of an offer of `size` bytes of which `held` are already on disk, for
    /// the file system holding `directory`: space other accepted transfers will still write
    /// to it is not free.
    static func admission(size: UInt64, held: UInt64, at directory: String, keepFree: UInt64) -> ResourceAdmission {
        let device = DiskSpace.device(of: directory)
        return ResourceAdmission.decide(size: size, held: held, free: DiskSpace.available(at: directory), keepFree: keepFree,
                                        promised: device.map { DiskSpace.pending.promised(on: $0) } ?? 0)
    }

    /// Accepts an offer into `directory`, refusing it (and telling the sender why) when the
    /// bytes still to come do not fit in the free space less `keepFree`.
    func accept(_ offer: ResourceOffer, directory: String, keepFree: UInt64, in channel: isolated PeerChannel) throws {
        guard offers[offer.stream] != nil else { throw PeerLinkError.resourceFailed(.noPendingOffer(name: offer.name)) }
        let fm = FileManager.default
        let partPath = Self.partialPath(in: directory, for: offer)
        let partDir = (partPath as NSString).deletingLastPathComponent
        do {
            try fm.createDirectory(atPath: partDir, withIntermediateDirectories: true)
        } catch {
            throw PeerLinkError.file(FileFailure(path: partDir, .failed(.create, message: error.localizedDescription)))
        }
        let writer = try IncomingFileWriter(partPath: partPath, size: offer.size)
        let device = DiskSpace.device(of: partDir)
        let admission = Self.admission(size: offer.size, held: writer.resumedFrom, at: partDir, keepFree: keepFree)
        let needed: UInt64
        switch admission {
        case let .accept(n):
            needed = n
        case let .refuse(reason):
            writer.discard()
            offers[offer.stream] = nil
            channel.core.refuseResource(offer.stream, error: reason, now: Runtime.milliseconds())
            channel.process()
            throw PeerLinkError.resourceRefused(name: offer.name, reason: reason)
        }
        offers[offer.stream] = nil
        let have = writer.resumedFrom
        receiving[offer.stream] = IncomingFile(offer: offer, directory: directory, writer: writer,
                                               account: IncomingResource(size: offer.size, resumedFrom: have, sha256: offer.sha256),
                                               reservation: device.map { DiskSpace.pending.reserve(needed, on: $0) })
        // A resumed prefix is hashed again before new bytes are written (on the writer's queue).
        let peer = channel.peer, session = channel.session, name = offer.name, size = offer.size
        writer.hashHeldPrefix { done, _ in
            session.emit(.resourceProgress(ResourceProgress(peer: peer, name: name, direction: .receiving, completed: done,
                                                            total: size, resumedFrom: have, stage: .verifying)))
        }
        try channel.core.acceptResource(offer.stream, offset: have, now: Runtime.milliseconds())
        channel.process()
        if let f = receiving[offer.stream] { channel.session.emit(.resourceProgress(progress(f, channel.peer))) }
    }

    func decline(_ offer: ResourceOffer, in channel: isolated PeerChannel) {
        guard offers[offer.stream] != nil else { return }
        channel.core.close(stream: offer.stream, cancel: true, now: Runtime.milliseconds())
        offers[offer.stream] = nil
        channel.process()
    }

    private func progress(_ f: IncomingFile, _ peer: PeerID) -> ResourceProgress {
        ResourceProgress(peer: peer, name: f.offer.name, direction: .receiving, completed: f.account.received, total: f.offer.size,
                         resumedFrom: f.account.resumedFrom)
    }

    /// Takes received bytes of a file for its writer (handed over at the end of the pass);
    /// credit goes back once they are written, so a slow disk slows the sender.
    private func writeResource(_ id: UInt32, _ bytes: ArraySlice<UInt8>, in channel: isolated PeerChannel) {
        guard receiving[id] != nil else { return }
        switch receiving[id]?.account.take(bytes.count) {
        case .write?:
            unwritten[id, default: []].append(bytes)
        case let .overrun(announced)?:
            failResource(id, .overrun(announced: announced), in: channel)
        case nil:
            return
        }
    }

    /// Hands each file's bytes of this pass to its writer, in order.
    private func flushFileBytes(in channel: isolated PeerChannel) {
        guard !unwritten.isEmpty else { return }
        let batches = unwritten
        unwritten.removeAll()
        for (id, parts) in batches {
            guard let f = receiving[id] else { continue }
            let count = parts.reduce(0) { $0 + $1.count }
            let hold = IncomingFileWriter.Hooks.holdCompletion()
            f.writer.write(parts) { [weak channel] result in
                Task {
                    if hold > 0 { try? await Runtime.sleep(nanoseconds: hold) }
                    await channel?.resourceWritten(id, count, result)
                }
            }
        }
    }

    func written(_ id: UInt32, _ count: Int, _ result: Result<UInt64, IncomingFileWriter.Failure>, in channel: isolated PeerChannel) {
        guard let f = receiving[id] else { return }
        switch result {
        case .success:
            // Completions come back through separate tasks, so they may run out of order: the
            // account counts what each one wrote (IncomingResource.wrote).
            f.reservation?.wrote(UInt64(count))
            if receiving[id]?.account.wrote(count) == true, let f = receiving[id] {
                channel.session.emit(.resourceProgress(progress(f, channel.peer)))
            }
            channel.core.consumed(count, of: id, now: Runtime.milliseconds())
        case let .failure(.diskFull(held)):
            receiving[id]?.account.stopped(holding: held)
            failResource(id, .diskFull(held: held, size: f.offer.size),
                         telling: f.account.failure(diskFull: true, held: held, reason: ""), in: channel)
        case let .failure(.failed(held, reason)):
            receiving[id]?.account.stopped(holding: held)
            failResource(id, .writeFailed(reason),
                         telling: f.account.failure(diskFull: false, held: held, reason: reason.description), in: channel)
        }
        channel.process()
    }

    private func failResource(_ id: UInt32, _ why: ResourceFailure, telling reason: ResourceError? = nil, in channel: isolated PeerChannel) {
        flushFileBytes(in: channel)  // what arrived before the failure is kept for a resume
        guard let f = receiving.removeValue(forKey: id) else { return }
        f.writer.close()
        if let reason { channel.core.refuseResource(id, error: reason, now: Runtime.milliseconds()) } else { channel.core.close(stream: id, cancel: true, now: Runtime.milliseconds()) }
        channel.session.emit(.resourceFinished(progress(f, channel.peer), path: nil, error: why))
    }

    private func finishResource(_ id: UInt32, status: StreamCloseStatus, in channel: isolated PeerChannel) {
        guard let f = receiving[id] else { return }
        guard status == .finished else {
            receiving[id] = nil
            f.writer.close()
            channel.session.emit(.resourceFinished(progress(f, channel.peer), path: nil, error: .cancelledBySender(name: f.offer.name)))
            return
        }
        // Every byte is hashed as it is written: verifying is a comparison, off this actor.
        switch f.account.expectedDigest {
        case let .success(sha):
            f.writer.finish(sha256: sha, directory: f.directory, name: f.offer.name) { [weak channel] result in
                Task { await channel?.resourceVerified(id, result) }
            }
        case .failure(.noDigest):
            receiving[id] = nil
            f.writer.close()
            channel.core.finishResource(id, ok: false, now: Runtime.milliseconds())
            channel.session.emit(.resourceFinished(progress(f, channel.peer), path: nil, error: .endedWithoutDigest))
            channel.process()
        }
    }

    func verified(_ id: UInt32, _ result: Result<String, ResourceFailure>, in channel: isolated PeerChannel) {
        guard var f = receiving.removeValue(forKey: id) else { return }
        switch result {
        case let .success(path):
            f.account.stopped(holding: f.offer.size)
            channel.core.finishResource(id, ok: true, now: Runtime.milliseconds())
            channel.session.emit(.resourceFinished(progress(f, channel.peer), path: path, error: nil))
        case let .failure(e):
            channel.core.finishResource(id, ok: false, now: Runtime.milliseconds())
            channel.session.emit(.resourceFinished(progress(f, channel.peer), path: nil, error: e))
        }
        channel.process()
    }
}
