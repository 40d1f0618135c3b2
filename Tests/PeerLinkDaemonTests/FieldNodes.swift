import Foundation
import Logging
import PeerLink
import PeerLinkStore
import Synchronization
import XCTest
@testable import PeerLinkDaemon

/// Field daemons for tests: real `FieldDaemon`s, ledgers and folders on the in-memory medium,
/// found through a shared `MemoryDiscovery`, with their log lines kept for assertions.
final class FieldNode: Sendable {
    let name: String
    let peer: PeerID
    let root: String
    let config: DaemonConfig
    let trust: IdentityStore
    let daemon: FieldDaemon
    let ledger: Ledger
    let lines = LogLines()
    /// Seconds added to the wall clock the daemon reads.
    let clockShift = ClockShift()

    var log: [String] { lines.all }
    var inbox: String { config.inbox }
    func outbox(for peer: PeerID) -> String { config.outbox + "/" + peer.description }

    /// Starts a node; `configure` adjusts its configuration, `adjustTiming` its timing (short
    /// for tests), `clockOffset` moves its clock.
    init(_ name: String, net: MemoryNetwork, discovery: MemoryDiscovery, root: String,
         clockOffset: Duration = .zero, configure: (inout DaemonConfig) -> Void = { _ in },
         timing adjustTiming: (inout FieldDaemon.Timing) -> Void = { _ in }) async throws {
        self.name = name
        self.root = root
        let identity = try IdentityStore(directory: root + "/cfg").loadOrCreate().identity
        peer = identity.peerID
        var c = DaemonConfig()
        c.service = "fieldtest"
        c.stateDirectory = root + "/state"
        c.inbox = root + "/inbox"
        c.outbox = root + "/outbox"
        c.accept = .all
        c.keepFree = 0
        configure(&c)
        config = c
        trust = IdentityStore(directory: root + "/cfg")
        let node = try Node(identity: identity, displayName: name,
                            transports: [MemoryTransport(network: net, address: identity.peerID.description)])
        let service = try ServiceType("fieldtest")
        let session = Session(node: node)
        let advertiser = Advertiser(node: node, service: service, discovery: discovery)
        let browser = Browser(node: node, service: service, discovery: discovery)
        let state = c.stateDirectory
        ledger = try Ledger(location: LedgerLocation(database: state + "/ledger.sqlite", sent: state + "/sent", expired: state + "/expired",
                                                     failed: state + "/failed", inbox: c.inbox),
                            now: Timestamp(millisecondsSince1970: Int64(Date().timeIntervalSince1970 * 1000)))
        let lines = self.lines
        let logger = Logger(label: name) { JournalLogHandler(label: $0, level: .debug, journal: false, write: lines.add) }
        var timing = FieldDaemon.Timing()
        timing.scanInterval = .milliseconds(100)
        timing.refusalRest = .milliseconds(300)
        timing.inviteBackoff = .milliseconds(300)
        adjustTiming(&timing)
        let shift = self.clockShift
        shift.seconds.withLock { $0 = Double(clockOffset.components.seconds) }
        daemon = try FieldDaemon(config: c, parts: .init(node: node, session: session, advertiser: advertiser, browser: browser, trust: trust),
                                 ledger: ledger, log: logger, timing: timing,
                                 clock: { Timestamp(millisecondsSince1970: Int64((Date().timeIntervalSince1970 + shift.seconds.withLock { $0 }) * 1000)) })
        await daemon.start()
        try await advertiser.start()
        try await browser.start()
    }

    func stop() async { await daemon.stop() }

    /// Sets the node's wall clock forward (positive) or back (negative) by `seconds`, as NTP
    /// or an owner fixing the date does; monotonic time runs on.
    func jumpClock(by seconds: Double) { clockShift.seconds.withLock { $0 += seconds } }

    /// Drops a file into the outbox for `peer` the documented way (a hidden name, then a rename).
    @discardableResult
    func drop(_ name: String, bytes: [UInt8], for peer: PeerID) throws -> String {
        let dir = outbox(for: peer)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/.\(name).tmp"))
        try FileManager.default.moveItem(atPath: dir + "/.\(name).tmp", toPath: dir + "/" + name)
        return dir + "/" + name
    }

    /// Waits until a log line contains `text`; fails the test naming the node and what it logged.
    func waitForLog(_ text: String, seconds: Double = 20, file: StaticString = #filePath, line: UInt = #line) async {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if log.contains(where: { $0.contains(text) }) { return }
            try? await Task.sleep(for: .milliseconds(50))
        }
        XCTFail("\(name) did not log '\(text)' within \(seconds) s; it logged:\n" + log.suffix(30).joined(separator: "\n"), file: file, line: line)
    }
}

/// A node's log lines.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

func scratch(_ test: XCTestCase) -> String {
    let path = NSTemporaryDirectory() + "peerlink-daemon-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    test.addTeardownBlock { [weak test] in
        if (test?.testRun?.totalFailureCount ?? 0) == 0 { try? FileManager.default.removeItem(atPath: path) } else { print("kept \(path)") }
    }
    return path
}

func files(_ dir: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
}

/// Seconds a test adds to a node's wall clock.
final class ClockShift: Sendable {
    let seconds = Mutex<Double>(0)
}

/// A small tmpfs for a node's inbox (a small SD card; needs root, which CI has).
final class SmallDisk {
    let path: String
    init(in dir: String, megabytes: Int) throws {
        path = dir + "/small-disk"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard path.withCString({ mount("tmpfs", $0, "tmpfs", 0, "size=\(megabytes)m") }) == 0 else {
            let why = String(cString: strerror(errno))
            if ProcessInfo.processInfo.environment["CI"] == "true" { throw PeerLinkError.file(FileFailure(path: path, .failed(.create, message: "mount a tmpfs: \(why)"))) }
            throw XCTSkip("cannot mount a \(megabytes) MiB tmpfs here (\(why)); run as root")
        }
    }
    /// Bytes free on it.
    var free: UInt64 {
        var s = statvfs()
        return statvfs(path, &s) == 0 ? UInt64(s.f_bavail) * UInt64(s.f_frsize) : 0
    }
    func unmount() { _ = path.withCString { umount2($0, Int32(MNT_DETACH)) } }
}
