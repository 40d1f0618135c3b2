import XCTest
@preconcurrency import Crypto
@testable import PeerLinkCore
import PeerLinkWire

final class DatagramPathTests: XCTestCase {
    /// Two completed handshakes (initiator, responder).
    func handshakes() throws -> (NoiseHandshakeXX, NoiseHandshakeXX) {
        var i = NoiseHandshakeXX(role: .initiator, staticKey: .init(), prologue: PeerLinkProtocol.prologue)
        var r = NoiseHandshakeXX(role: .responder, staticKey: .init(), prologue: PeerLinkProtocol.prologue)
        _ = try r.readMessage(try i.writeMessage(payload: []))
        _ = try i.readMessage(try r.writeMessage(payload: []))
        _ = try r.readMessage(try i.writeMessage(payload: []))
        return (i, r)
    }

    func testBothDirectionsRoundTrip() throws {
        let (hi, hr) = try handshakes()
        var a = try DatagramPath(handshake: hi, initiator: true)
        var b = try DatagramPath(handshake: hr, initiator: false)
        XCTAssertEqual(a.sendToken, b.receiveToken)
        XCTAssertEqual(b.sendToken, a.receiveToken)
        XCTAssertNotEqual(a.sendToken, a.receiveToken)
        let frame = Frame.unreliable(payload: Array("telemetry".utf8)).encode()
        let d1 = try a.seal(frame)
        XCTAssertLessThanOrEqual(d1.count, DatagramEnvelope.maxLength)
        XCTAssertEqual(try b.open(try DatagramEnvelope.decode(d1)), frame)
        let d2 = try b.seal(frame)
        XCTAssertEqual(try a.open(try DatagramEnvelope.decode(d2)), frame)
    }

    func testReplayTamperAndForeignTokenAreRefused() throws {
        let (hi, hr) = try handshakes()
        var a = try DatagramPath(handshake: hi, initiator: true)
        var b = try DatagramPath(handshake: hr, initiator: false)
        let d = try a.seal([5, 1, 2, 3])
        let env = try DatagramEnvelope.decode(d)
        _ = try b.open(env)
        XCTAssertThrowsError(try b.open(env), "a replayed datagram is refused")
        var tampered = try a.seal([5, 9])
        tampered[tampered.count - 1] ^= 1
        XCTAssertThrowsError(try b.open(try DatagramEnvelope.decode(tampered)))
        var forged = try DatagramEnvelope.decode(try a.seal([5, 7]))
        forged.nonce += 1000  // authenticated nonce: changing it breaks the tag
        XCTAssertThrowsError(try b.open(forged))
        // A datagram sealed by another link's keys does not open here.
        let (hi2, _) = try handshakes()
        var other = try DatagramPath(handshake: hi2, initiator: true)
        XCTAssertThrowsError(try b.open(try DatagramEnvelope.decode(try other.seal([5]))))
        // The refused attempts did not poison the window: the next real datagram opens.
        XCTAssertEqual(try b.open(try DatagramEnvelope.decode(try a.seal([5, 4]))), [5, 4])
    }

    func testReorderedDatagramsWithinTheWindowAreAccepted() throws {
        let (hi, hr) = try handshakes()
        var a = try DatagramPath(handshake: hi, initiator: true)
        var b = try DatagramPath(handshake: hr, initiator: false)
        let sealed = try (0..<10).map { try a.seal([5, UInt8($0)]) }
        for i in [3, 0, 9, 1, 2, 8, 4, 7, 5, 6] {
            XCTAssertEqual(try b.open(try DatagramEnvelope.decode(sealed[i])), [5, UInt8(i)])
        }
        for d in sealed { XCTAssertThrowsError(try b.open(try DatagramEnvelope.decode(d))) }
    }

    func testOversizedFrameIsRefused() throws {
        let (hi, _) = try handshakes()
        var a = try DatagramPath(handshake: hi, initiator: true)
        XCTAssertThrowsError(try a.seal([UInt8](repeating: 0, count: DatagramPath.maxFrame + 1)))
        XCTAssertNoThrow(try a.seal([UInt8](repeating: 0, count: DatagramPath.maxFrame)))
    }

    func testExportNeedsACompletedHandshake() throws {
        let i = NoiseHandshakeXX(role: .initiator, staticKey: .init(), prologue: [])
        XCTAssertThrowsError(try i.exportKey(label: "x"))
    }

    func testReplayWindow() {
        var w = ReplayWindow(size: 64)
        XCTAssertTrue(w.allows(5)); w.record(5)
        XCTAssertFalse(w.allows(5))
        XCTAssertTrue(w.allows(3)); w.record(3)
        XCTAssertFalse(w.allows(3))
        w.record(200)
        XCTAssertFalse(w.allows(100), "older than the window")
        XCTAssertTrue(w.allows(199))
        XCTAssertFalse(w.allows(200))
        w.record(199)
        XCTAssertFalse(w.allows(199))
        XCTAssertTrue(w.allows(137))
        XCTAssertFalse(w.allows(136))
    }

    func testEnvelopeParserRejectsGarbage() {
        XCTAssertThrowsError(try DatagramEnvelope.decode([]))
        XCTAssertThrowsError(try DatagramEnvelope.decode([0x00] + [UInt8](repeating: 0, count: 40)))
        XCTAssertThrowsError(try DatagramEnvelope.decode([0xD1] + [UInt8](repeating: 0, count: 20)), "too short for a tag")
        for n in 0..<33 { _ = try? DatagramEnvelope.decode([0xD1] + [UInt8](repeating: 7, count: n)) }
    }
}
