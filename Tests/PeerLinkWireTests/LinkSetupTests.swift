import TestKit
import XCTest
@testable import PeerLinkWire

final class LinkSetupTests: XCTestCase {
    func frame(_ m: LinkSetup) -> Frame { .reliable(seq: 1, record: .linkSetup(m)) }

    /// Raw LINK_SETUP record bytes inside a RELIABLE frame.
    func raw(id: UInt32 = 1, step: UInt8 = 1, medium: [UInt8] = Array("wifi-direct".utf8),
             parameters: [([UInt8], [UInt8])] = [], count: Int? = nil, text: [UInt8] = []) -> [UInt8] {
        var w = WireWriter()
        w.u8(0x03); w.u64(1); w.u8(Record.Kind.linkSetup.rawValue)
        w.u32(id); w.u8(step); w.u8(UInt8(medium.count)); w.append(medium)
        w.u8(UInt8(count ?? parameters.count))
        for (n, v) in parameters { w.u8(UInt8(n.count)); w.append(n); w.u16(UInt16(v.count)); w.append(v) }
        w.u16(UInt16(text.count)); w.append(text)
        return w.bytes
    }

    func testRoundTrip() throws {
        let all: [LinkSetup] = LinkSetup.Step.allCases.map { step in
            LinkSetup(id: 0xdead_beef, step: step, medium: "wifi-direct",
                      parameters: [.init("ssid", string: "DIRECT-ab-PeerLink"), .init("psk", Array(repeating: 7, count: 64)), .init("empty", [])],
                      text: "sending 'f.bin' (2.0 MiB) – ü")
        } + [LinkSetup(id: 0, step: .reject, medium: "m")]
        for m in all { XCTAssertEqual(try Frame.decode(frame(m).encode()), frame(m)) }
        XCTAssertEqual(LinkSetup(id: 1, step: .propose, medium: "x", parameters: [.init("a", [1])]).string("a"), "\u{1}")
    }

    func testBoundsAndMalformedInputAreRejected() {
        let long = Array(repeating: UInt8(0x61), count: 33)
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(medium: long))), "medium name over 32 bytes")
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(medium: []))), "empty medium")
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(medium: [0xff]))), "medium not UTF-8")
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(step: 0))), "step 0")
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(step: 7))), "unknown step")
        let seventeen = (0..<17).map { (Array("p\($0)".utf8), [UInt8]()) }
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(parameters: seventeen))), "more than 16 parameters")
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(parameters: [(Array("a".utf8), []), (Array("a".utf8), [])]))), "a name twice")
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(parameters: [([], [1])]))), "an empty name")
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(parameters: [(Array("v".utf8), Array(repeating: 0, count: 513))]))), "value over 512")
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(parameters: [(long, [])]))), "name over 32 bytes")
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(count: 2))), "fewer parameters than counted")
        XCTAssertNotNil(assertWireError(try Frame.decode(raw(text: [0xc3]))), "text not UTF-8")
        XCTAssertNotNil(assertWireError(try Frame.decode(raw() + [0])), "trailing bytes")
        let ok = raw(parameters: [(Array("v".utf8), Array(repeating: 1, count: 512))])
        for cut in 9..<ok.count { XCTAssertNotNil(assertWireError(try Frame.decode(Array(ok.prefix(cut)))), "truncated at \(cut)") }
        XCTAssertNoThrow(try Frame.decode(ok))
    }

    func testRandomBytesNeverCrashTheDecoder() {
        var rng = seededGenerator(self)
        let base = raw(parameters: [(Array("ssid".utf8), Array("DIRECT-x".utf8))], text: Array("why".utf8))
        for _ in 0..<20_000 {
            var b = base
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let i = Int.random(in: 9..<b.count, using: &rng)
                b[i] = UInt8.random(in: 0...255, using: &rng)
            }
            _ = try? Frame.decode(b)
        }
    }
}
