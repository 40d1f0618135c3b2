@testable import PeerLink
@testable import PeerLinkBluetooth
import TestKit
import XCTest

/// The mgmt codec behind `doctor`'s reachability line and the advertiser's connectable check.
final class ManagementCodecTests: XCTestCase {
    /// A Command Complete event for Read Controller Information on `index`.
    func infoReply(index: UInt16 = 1, current: ControllerSettings, status: UInt8 = 0, name: String = "lab") -> [UInt8] {
        var info = [UInt8](repeating: 0, count: 280)
        info[0..<6] = [0x01, 0x00, 0x01, 0x01, 0xAA, 0x00]  // 00:AA:01:01:00:01, least significant first
        info[6..<9] = [0x0b, 0xf1, 0x05]  // version 11 (5.2), manufacturer 0x05f1: neither is settings
        let supported = ControllerSettings([.powered, .connectable, .discoverable, .bondable, .secureSimplePairing, .bredr, .lowEnergy])
        for (o, v) in [(9, supported.rawValue), (13, current.rawValue)] { for k in 0..<4 { info[o + k] = UInt8(truncatingIfNeeded: v >> (8 * k)) } }
        info.replaceSubrange(20..<(20 + name.utf8.count), with: name.utf8)
        let params: [UInt8] = [0x04, 0x00, status] + (status == 0 ? info : [])
        return [0x01, 0x00, UInt8(index), 0x00, UInt8(params.count & 0xff), UInt8(params.count >> 8)] + params
    }

    func testEncodesReadControllerInformation() {
        XCTAssertEqual(ManagementCodec.command(ManagementCodec.readInfo, index: 3), [0x04, 0x00, 0x03, 0x00, 0x00, 0x00])
    }

    func testParsesSettingsOfAStockBluetoothdAdapter() throws {
        let packet = infoReply(current: [.powered, .secureSimplePairing, .bredr, .lowEnergy])
        let result = try XCTUnwrap(try ManagementCodec.reply(to: ManagementCodec.readInfo, index: 1, packet: packet))
        let info = try ManagementCodec.controllerInfo(result)
        XCTAssertEqual(info.address, "00:AA:01:01:00:01")
        XCTAssertEqual(info.name, "lab")
        XCTAssertEqual(info.current.names, ["powered", "ssp", "br/edr", "le"])
        XCTAssertFalse(info.acceptsBREDRConnections, "bluetoothd's default: not connectable")
        let on = try ManagementCodec.controllerInfo(try XCTUnwrap(ManagementCodec.reply(
            to: ManagementCodec.readInfo, index: 1, packet: infoReply(current: [.powered, .connectable, .bredr]))))
        XCTAssertTrue(on.acceptsBREDRConnections)
    }

    func testSkipsEventsForOtherCommandsAndControllers() throws {
        XCTAssertNil(try ManagementCodec.reply(to: ManagementCodec.readInfo, index: 2, packet: infoReply(index: 1, current: [])))
        let newSettings: [UInt8] = [0x06, 0x00, 0x01, 0x00, 0x04, 0x00, 0x81, 0x00, 0x00, 0x00]
        XCTAssertNil(try ManagementCodec.reply(to: ManagementCodec.readInfo, index: 1, packet: newSettings))
        let otherCommand: [UInt8] = [0x01, 0x00, 0x01, 0x00, 0x03, 0x00, 0x05, 0x00, 0x00]
        XCTAssertNil(try ManagementCodec.reply(to: ManagementCodec.readInfo, index: 1, packet: otherCommand))
    }

    func testKernelRefusalsAndMalformedRepliesAreErrors() {
        XCTAssertThrowsError(try ManagementCodec.reply(to: ManagementCodec.readInfo, index: 1, packet: infoReply(current: [], status: 0x11))) {
            XCTAssertEqual($0 as? ManagementError, .status(0x11))
            XCTAssertTrue("\($0)".contains("no such Bluetooth controller"))
        }
        XCTAssertThrowsError(try ManagementCodec.reply(to: 4, index: 1, packet: [0x01, 0x00]))
        var short = infoReply(current: [])
        short.removeLast()
        XCTAssertThrowsError(try ManagementCodec.reply(to: 4, index: 1, packet: short), "length field and size disagree")
        XCTAssertThrowsError(try ManagementCodec.controllerInfo([0x00, 0x01][...]))
    }

    /// Random and mutated packets: an answer, nil, or an error, never a crash.
    func testFuzzedPacketsNeverCrash() {
        var rng = seededGenerator(self)
        let seed = infoReply(current: [.powered, .bredr])
        for i in 0..<20_000 {
            var p: [UInt8]
            if i % 2 == 0 {
                p = (0..<Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            } else {
                p = seed
                for _ in 0..<Int.random(in: 1...4, using: &rng) { p[Int.random(in: 0..<p.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
                if Bool.random(using: &rng) { p.removeLast(Int.random(in: 0..<p.count, using: &rng)) }
            }
            if let r = try? ManagementCodec.reply(to: ManagementCodec.readInfo, index: 1, packet: p) { _ = try? ManagementCodec.controllerInfo(r) }
        }
    }

    func testDoctorSaysWhetherPeersCanConnect() {
        let stock = DoctorBluetooth.reachabilityCheck("hci1", info: .success(ControllerInfo(address: "", supported: [], current: [.powered, .bredr, .lowEnergy], name: "")))
        XCTAssertTrue(stock.detail.contains("not connectable now"), stock.detail)
        XCTAssertTrue(stock.detail.contains("turns it on through bluetoothd"))
        let on = DoctorBluetooth.reachabilityCheck("hci1", info: .success(ControllerInfo(address: "", supported: [], current: [.powered, .bredr, .connectable], name: "")))
        XCTAssertTrue(on.ok)
        XCTAssertTrue(on.detail.hasPrefix("connectable"))
        let leOnly = DoctorBluetooth.reachabilityCheck("hci1", info: .success(ControllerInfo(address: "", supported: [], current: [.powered, .lowEnergy], name: "")))
        XCTAssertFalse(leOnly.ok)
        XCTAssertEqual(leOnly.fix, "`btmgmt --index 1 bredr on` (with the adapter powered off)")
        let unreadable = DoctorBluetooth.reachabilityCheck("hci1", info: .failure(ManagementError.status(0x11)))
        XCTAssertFalse(unreadable.ok)
    }
}
