import Foundation
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkWiFiDirect

/// One node of the Wi-Fi lab (`bt-lab.sh --radios N`): its radio and the bus of its own
/// wpa_supplicant (guest-wifi.sh starts one per radio, as on separate machines).
struct WiFiLabNode: Sendable {
    let radio: String
    let bus: String
    let wifi: WiFiDirect

    /// Node `k` from the lab's environment; skips the test outside the lab or with too few radios.
    static func lab(_ k: Int) throws -> WiFiLabNode {
        let env = ProcessInfo.processInfo.environment
        guard env["PEERLINK_LAB"] == "1" else { throw XCTSkip("Wi-Fi lab only: run scripts/test-wifi.sh") }
        guard let n = Int(env["PEERLINK_LAB_RADIOS"] ?? ""), n > k else {
            throw XCTSkip("needs \(k + 1) radios (bt-lab.sh --radios \(k + 1)); PEERLINK_LAB_RADIOS=\(env["PEERLINK_LAB_RADIOS"] ?? "unset")")
        }
        let radio = try XCTUnwrap(env["PEERLINK_LAB_WIFI\(k)"])
        let bus = try XCTUnwrap(env["PEERLINK_LAB_WIFI\(k)_BUS"])
        return WiFiLabNode(radio: radio, bus: bus, wifi: WiFiDirect(busAddress: bus))
    }

    /// The interfaces wpa_supplicant on this node's bus manages now (their names).
    func supplicantInterfaces() throws -> [String] {
        let b = try WPASupplicantBus(address: bus)
        return try b.interfacePaths().map { try b.interfaceInfo($0).ifname }.sorted()
    }
}

/// What the lab measures, appended to RESULTS/wifi-figures.txt and printed.
extension XCTestCase {
    /// The lab's nodes A and B; whatever a failed test left set up on their radios is left
    /// before the next test.
    func labNodes() throws -> (WiFiLabNode, WiFiLabNode) {
        let a = try WiFiLabNode.lab(0), b = try WiFiLabNode.lab(1)
        addTeardownBlock { @Sendable in
            await a.wifi.leaveAll()
            await b.wifi.leaveAll()
        }
        return (a, b)
    }
}

func wifiFigure(_ line: String) {
    labLog("figure: " + line)
    let path = (ProcessInfo.processInfo.environment["PEERLINK_LAB_RESULTS"] ?? "/tmp") + "/wifi-figures.txt"
    if let h = FileHandle(forWritingAtPath: path) ?? (FileManager.default.createFile(atPath: path, contents: nil) ? FileHandle(forWritingAtPath: path) : nil) {
        h.seekToEndOfFile()
        h.write(Data((line + "\n").utf8))
        try? h.close()
    }
}

/// A network interface's byte counter (`/sys/class/net/IF/statistics/NAME`).
func interfaceCounter(_ interface: String, _ name: String) throws -> UInt64 {
    let text = try String(contentsOfFile: "/sys/class/net/\(interface)/statistics/\(name)", encoding: .utf8)
    return try XCTUnwrap(UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)), "\(interface) \(name): \(text)")
}

/// Step timings as `start-group 1.23 s, link-local 0.40 s`.
func describe(_ timings: [WiFiStepTiming]) -> String {
    timings.map { String(format: "%@ %.2f s", $0.step.rawValue, seconds($0.duration)) }.joined(separator: ", ")
}

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

/// Raw TCP over a group: `count` bytes of a known pattern from `sender` (a connected socket)
/// to `receiver`, each side on its own thread. Returns the seconds from the first write to
/// the last byte read and whether every byte arrived intact. Fails the test after `seconds`
/// (the blocked reader and writer are left to end when the caller closes the sockets).
func copyOverTCP(sender: Int32, receiver: Int32, count: Int, within seconds: Double = 120,
                 file: StaticString = #filePath, line: UInt = #line) async throws -> (seconds: Double, intact: Bool) {
    try await within(seconds, "a TCP copy of \(count) bytes", file: file, line: line) {
        try await copyOverTCPUnbounded(sender: sender, receiver: receiver, count: count)
    }
}

private func copyOverTCPUnbounded(sender: Int32, receiver: Int32, count: Int) async throws -> (seconds: Double, intact: Bool) {
    let chunk = 256 * 1024
    let pattern = [UInt8]((0..<chunk).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
    let start = Date()
    async let sent: Void = onThread {
        var left = count
        while left > 0 {
            let n = min(left, chunk)
            try writeAll(sender, pattern, n)
            left -= n
        }
        shutdown(sender, Int32(SHUT_WR))
    }
    let received: (Int, Bool) = try await onThread {
        var buffer = [UInt8](repeating: 0, count: chunk)
        var total = 0, intact = true
        while true {
            let r = buffer.withUnsafeMutableBytes { read(receiver, $0.baseAddress, chunk) }
            if r < 0, errno == EINTR { continue }
            guard r >= 0 else { throw TransportError.system(operation: "read", errno: errno) }
            if r == 0 { break }
            for i in 0..<r where buffer[i] != pattern[(total + i) % chunk] { intact = false; break }
            total += r
        }
        return (total, intact)
    }
    try await sent
    let elapsed = Date().timeIntervalSince(start)
    return (elapsed, received.0 == count && received.1)
}

/// Writes the first `count` bytes of `bytes`, however many writes it takes.
func writeAll(_ fd: Int32, _ bytes: [UInt8], _ count: Int) throws {
    var off = 0
    while off < count {
        let w = bytes.withUnsafeBytes { raw in write(fd, raw.baseAddress.map { $0 + off }, count - off) }
        if w < 0, errno == EINTR { continue }
        guard w > 0 else { throw TransportError.system(operation: "write", errno: errno) }
        off += w
    }
}

/// Runs blocking `body` on a thread of its own (never on the cooperative pool).
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { c in
        Thread { c.resume(with: Result { try body() }) }.start()
    }
}

/// The first `.ended` event of `events` within `timeout` seconds, nil if none came.
func firstEnd(of events: AsyncStream<WiFiGroupEvent>, timeout: Double) async -> WiFiGroupEndReason? {
    await withTaskGroup(of: WiFiGroupEndReason?.self) { group in
        group.addTask {
            for await e in events { if case let .ended(reason) = e { return reason } }
            return nil
        }
        group.addTask {
            try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// The group interfaces (`p2p-*`) that exist now.
func groupInterfaces() throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: "/sys/class/net").filter { $0.hasPrefix("p2p-") }.sorted()
}

/// Everything PeerLink (or another client) added to either node's wpa_supplicant is gone, and
/// so are the group interfaces and P2P devices: the lab is as the test found it.
func assertLeftAsFound(_ a: WiFiLabNode, _ b: WiFiLabNode, file: StaticString = #filePath, line: UInt = #line) throws {
    XCTAssertEqual(try a.supplicantInterfaces(), [], "A's wpa_supplicant", file: file, line: line)
    XCTAssertEqual(try b.supplicantInterfaces(), [], "B's wpa_supplicant", file: file, line: line)
    XCTAssertEqual(try groupInterfaces(), [], "group interfaces left", file: file, line: line)
    let devices = (try Nl80211.devices()) ?? []
    XCTAssertEqual(devices.filter { $0.type != .station }.map { "\($0.interfaceName ?? "wdev") \($0.type.map { "\($0)" } ?? "?")" }, [],
                   "only the radios' own station interfaces remain", file: file, line: line)
}
