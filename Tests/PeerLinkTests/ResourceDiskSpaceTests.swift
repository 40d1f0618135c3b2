import Foundation
import TestKit
import XCTest
@testable import PeerLink

/// A receiver whose disk cannot hold a file says so, on both sides, and keeps what it has: a
/// real 16 MiB tmpfs stands for a small SD card.
final class ResourceDiskSpaceTests: XCTestCase {
    /// A 16 MiB tmpfs mounted for the test (needs root; CI runs as root).
    final class SmallDisk {
        let path: String
        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("pl-disk-\(UUID())").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let rc = path.withCString { mount("tmpfs", $0, "tmpfs", 0, "size=16m") }
            guard rc == 0 else {
                let why = String(cString: strerror(errno))
                try? FileManager.default.removeItem(atPath: path)
                if ProcessInfo.processInfo.environment["CI"] == "true" { throw PeerLinkError.file(FileFailure(path: path, .failed(.create, message: "mount a tmpfs: \(why)"))) }
                throw XCTSkip("cannot mount a 16 MiB tmpfs here (\(why)); run as root")
            }
        }
        func unmount() {
            _ = path.withCString { umount2($0, Int32(MNT_DETACH)) }
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    /// Accepts every offer on `session` into `dir`, keeping `keepFree` free, and records what
    /// the receiving side reports (refusals and finished or failed transfers).
    final class Receiver: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [String] = []
        private var task: Task<Void, Never>?
        private var margin: UInt64
        var lines: [String] { lock.withLock { items } }
        /// Free space the receiver keeps; may be changed between offers.
        var keepFree: UInt64 {
            get { lock.withLock { margin } }
            set { lock.withLock { margin = newValue } }
        }
        private func add(_ s: String) { lock.withLock { items.append(s) } }

        /// Run right after an offer was accepted (e.g. to fill the disk).
        var afterAccept: (@Sendable () -> Void)? {
            get { lock.withLock { hook } }
            set { lock.withLock { hook = newValue } }
        }
        private var hook: (@Sendable () -> Void)?

        init(_ session: Session, dir: String, keepFree: UInt64, afterAccept: (@Sendable () -> Void)? = nil) {
            margin = keepFree
            hook = afterAccept
            task = Task { [weak self] in
                for await e in session.events {
                    switch e {
                    case let .resourceOffered(o):
                        let keep = self?.keepFree ?? 0
                        Task {
                            do {
                                try await session.accept(o, into: dir, keepingFree: keep)
                                self?.afterAccept?()
                            } catch {
                                self?.add("refused \(o.name): \(error)")
                            }
                        }
                    case let .resourceFinished(p, path, error) where p.direction == .receiving:
                        self?.add(error.map { "failed \(p.name): \($0)" } ?? "received \(p.name) at \(path ?? "?")")
                    default: break
                    }
                }
            }
        }
        deinit { task?.cancel() }
    }

    func file(_ dir: String, _ name: String, mib: Int, seed: UInt8) throws -> (path: String, content: Data) {
        let content = Data((0..<(mib << 20)).map { UInt8(truncatingIfNeeded: $0 >> 12) &+ seed })
        let path = dir + "/" + name
        try content.write(to: URL(fileURLWithPath: path))
        return (path, content)
    }

    func testAnOfferThatCannotFitIsRefusedUpFrontAndBothSidesSayWhy() async throws {
        let disk = try SmallDisk()
        defer { disk.unmount() }
        let src = FileManager.default.temporaryDirectory.appendingPathComponent("pl-src-\(UUID())").path
        try FileManager.default.createDirectory(atPath: src, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: src) }
        let big = try file(src, "f.bin", mib: 32, seed: 1)

        let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                        discovery: LoopbackDiscovery())
        let inbox = disk.path + "/inbox"
        let receiver = Receiver(p.sa, dir: inbox, keepFree: 0)
        do {
            try await within(60, "the file sent") { try await p.sb.sendResource(at: big.path, to: p.a.peerID) }
            XCTFail("a 32 MiB file cannot fit on a 16 MiB disk")
        } catch let PeerLinkError.resourceRefused(name, reason) {
            XCTAssertEqual(name, "f.bin")
            guard case let .noSpace(needed, available, margin) = reason else { return XCTFail("unexpected reason \(reason)") }
            XCTAssertEqual(needed, 32 << 20)
            XCTAssertLessThanOrEqual(available, 16 << 20)
            XCTAssertEqual(margin, 0, "the receiver says it keeps nothing free")
            XCTAssertTrue("\(reason)".hasPrefix("not enough space on the receiver: 32.0 MiB offered, "), "\(reason)")
            XCTAssertFalse("\(reason)".contains("keeping"), "no margin, no word about it: \(reason)")
        }
        try await waitUntil(timeout: 10) { receiver.lines.contains { $0.hasPrefix("refused f.bin: not enough space on the receiver") } }
        // The refused part file is removed on its writer's queue, which may still be at it when
        // the refusal reaches the sender (the sockets' I/O loop delivers it in one hop).
        let partials = { (try? FileManager.default.contentsOfDirectory(atPath: inbox + "/.peerlink-partial")) ?? [] }
        _ = await waitUntil(timeout: 10) { partials().isEmpty }
        XCTAssertEqual(partials(), [], "nothing is left on the receiver's disk")

        // The margin counts too: a 4 MiB file fits, but not while keeping 14 MiB free.
        let small = try file(src, "g.bin", mib: 4, seed: 2)
        receiver.keepFree = 14 << 20
        do {
            try await within(60, "the file sent") { try await p.sb.sendResource(at: small.path, to: p.a.peerID) }
            XCTFail("the margin leaves less than 4 MiB")
        } catch let PeerLinkError.resourceRefused(_, reason) {
            guard case .noSpace(4 << 20, _, 14 << 20) = reason else { return XCTFail("unexpected reason \(reason)") }
            // The sender says what the receiver says, the margin included.
            XCTAssertTrue("\(reason)".hasSuffix(" free (keeping 14.0 MiB free: --keep-free)"), "\(reason)")
            let said = await waitUntil(timeout: 10) { receiver.lines.contains { $0.hasPrefix("refused g.bin: ") } }
            XCTAssertTrue(said, "the receiver refused g.bin: \(receiver.lines)")
            let line = receiver.lines.first { $0.hasPrefix("refused g.bin: ") } ?? ""
            XCTAssertTrue(line.contains("\(reason)"), "receiver: \(line)\nsender: \(reason)")
        }
    }

    func testTwoOffersThatFitOnlyOneAtATimeAreNotBothAccepted() async throws {
        let disk = try SmallDisk()
        defer { disk.unmount() }
        let src = try sourceDir()
        defer { try? FileManager.default.removeItem(atPath: src) }
        let one = try file(src, "one.bin", mib: 10, seed: 3)
        let two = try file(src, "two.bin", mib: 10, seed: 4)
        let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                        discovery: LoopbackDiscovery())
        let inbox = disk.path + "/inbox"
        let receiver = Receiver(p.sa, dir: inbox, keepFree: 0)
        let errors = try await within(60, "both offers settled") { () -> [Error?] in
            async let a: Error? = { do { try await p.sb.sendResource(at: one.path, to: p.a.peerID); return nil } catch { return error } }()
            async let b: Error? = { do { try await p.sb.sendResource(at: two.path, to: p.a.peerID); return nil } catch { return error } }()
            return await [a, b]
        }
        let failed = errors.compactMap { $0 }
        XCTAssertEqual(failed.count, 1, "one of the two files fits: \(errors)")
        guard let e = failed.first, case PeerLinkError.resourceRefused(_, .noSpace(10 << 20, _, _)) = e else {
            return XCTFail("the second offer is refused up front, got \(String(describing: failed.first))")
        }
        let arrived = try FileManager.default.contentsOfDirectory(atPath: inbox).filter { $0.hasSuffix(".bin") }
        XCTAssertEqual(arrived.count, 1, "\(receiver.lines)")
    }

    func testSpaceRunningOutMidwayIsNamedAndThePartialFileResumes() async throws {
        let disk = try SmallDisk()
        defer { disk.unmount() }
        let src = try sourceDir()
        defer { try? FileManager.default.removeItem(atPath: src) }
        let one = try file(src, "one.bin", mib: 10, seed: 5)
        let p = try await connectedPair(transportA: TCPTransport(bindHost: "127.0.0.1"), transportB: TCPTransport(bindHost: "127.0.0.1"),
                                        discovery: LoopbackDiscovery())
        let inbox = disk.path + "/inbox"
        // Another program fills the disk right after the offer was accepted, leaving 2 MiB.
        let root = disk.path, filler = disk.path + "/filler"
        let receiver = Receiver(p.sa, dir: inbox, keepFree: 0) {
            let free = DiskSpace.available(at: root) ?? 0
            let fd = open(filler, O_CREAT | O_WRONLY, 0o644)
            _ = posix_fallocate(fd, 0, off_t(free - min(free, 2 << 20)))
            close(fd)
        }
        do {
            try await within(60, "the file sent") { try await p.sb.sendResource(at: one.path, to: p.a.peerID) }
            XCTFail("the disk filled up")
        } catch let e as PeerLinkError {
            guard case let .resourceRefused(_, .diskFull(held, size)) = e else { return XCTFail("the sender is told the disk filled up, got \(e)") }
            XCTAssertEqual(size, 10 << 20)
            XCTAssertGreaterThan(held, 0)
            XCTAssertLessThan(held, size)
            XCTAssertTrue("\(e)".contains("disk is full after"), "\(e)")
        }
        try await waitUntil(timeout: 10) { receiver.lines.contains { $0.hasPrefix("failed one.bin: the disk is full after") } }
        let parts = try FileManager.default.contentsOfDirectory(atPath: inbox + "/.peerlink-partial")
        XCTAssertEqual(parts.count, 1, "the partial file stays for a resume")

        // With space freed, sending again resumes from the kept bytes.
        try FileManager.default.removeItem(atPath: filler)
        receiver.afterAccept = nil
        let resumed = ResumeLog()
        try await within(60, "the resumed send") { try await p.sb.sendResource(at: one.path, to: p.a.peerID) { resumed.add($0.resumedFrom) } }
        XCTAssertGreaterThan(resumed.max, 0, "the second attempt resumed from the kept bytes")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: inbox + "/one.bin")), one.content)
    }

    func sourceDir() throws -> String {
        let src = FileManager.default.temporaryDirectory.appendingPathComponent("pl-src-\(UUID())").path
        try FileManager.default.createDirectory(atPath: src, withIntermediateDirectories: true)
        return src
    }
}

final class ResumeLog: @unchecked Sendable {
    private let lock = NSLock()
    private var value: UInt64 = 0
    func add(_ v: UInt64) { lock.withLock { value = Swift.max(value, v) } }
    var max: UInt64 { lock.withLock { value } }
}
