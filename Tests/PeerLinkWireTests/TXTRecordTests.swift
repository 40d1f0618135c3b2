import XCTest
@testable import PeerLinkWire

final class TXTRecordTests: XCTestCase {
    func rdata(_ entries: [[UInt8]]) -> [UInt8] {
        entries.flatMap { [UInt8($0.count)] + $0 }
    }

    func testEncodeIsSortedAndLengthPrefixed() throws {
        let enc = try TXTRecord.encode(["b": "2", "a": "1", "empty": ""])
        XCTAssertEqual(enc, rdata([bytes("a=1"), bytes("b=2"), bytes("empty=")]))
        XCTAssertEqual(try TXTRecord.encode([:]), [])
    }

    func testRoundTrip() throws {
        let d = ["_id": "abc", "name": "Zoë", "k": "v=w", "x": ""]
        XCTAssertEqual(try TXTRecord.decode(TXTRecord.encode(d)), d)
    }

    func testEntryOf255BytesAndAbove() throws {
        let ok = ["k": String(repeating: "v", count: 253)]  // "k=" + 253 = 255
        let enc = try TXTRecord.encode(ok)
        XCTAssertEqual(enc.count, 256)
        XCTAssertEqual(try TXTRecord.decode(enc), ok)
        let e = assertWireError(try TXTRecord.encode(["k": String(repeating: "v", count: 254)]))
        XCTAssertEqual(e?.isLimitExceeded, true)
        // The resolver form accepts any byte strings: longer than 255 is rejected there.
        let long = bytes("k=") + [UInt8](repeating: 0x61, count: 254)
        XCTAssertEqual(assertWireError(try TXTRecord.decode(entries: [long]))?.isLimitExceeded, true)
    }

    func testEmptyStringsSkipped() throws {
        XCTAssertEqual(try TXTRecord.decode([0, 0]), [:])
        XCTAssertEqual(try TXTRecord.decode(rdata([[], bytes("a=1"), []])), ["a": "1"])
        XCTAssertEqual(try TXTRecord.decode(entries: [[], bytes("a=1")]), ["a": "1"])
        XCTAssertEqual(try TXTRecord.decode([]), [:])
    }

    func testKeyWithoutEqualsHasEmptyValue() throws {
        XCTAssertEqual(try TXTRecord.decode(rdata([bytes("flag")])), ["flag": ""])
        XCTAssertEqual(try TXTRecord.decode(rdata([bytes("flag="), bytes("other")])), ["flag": "", "other": ""])
    }

    func testLeadingEqualsIgnored() throws {
        XCTAssertEqual(try TXTRecord.decode(rdata([bytes("=oops"), bytes("a=1"), bytes("=")])), ["a": "1"])
    }

    func testValueMayContainEquals() throws {
        XCTAssertEqual(try TXTRecord.decode(rdata([bytes("a=b=c")])), ["a": "b=c"])
    }

    func testDuplicatesFirstWinsCaseInsensitively() throws {
        XCTAssertEqual(try TXTRecord.decode(rdata([bytes("Key=1"), bytes("key=2"), bytes("KEY=3")])), ["Key": "1"])
        XCTAssertEqual(try TXTRecord.decode(rdata([bytes("a=1"), bytes("a=2")])), ["a": "1"])
        XCTAssertEqual(try TXTRecord.decode(rdata([bytes("a"), bytes("A=2")])), ["a": ""])
    }

    func testNonUTF8Rejected() {
        XCTAssertEqual(assertWireError(try TXTRecord.decode(rdata([[0xff, 0x3d, 0x31]])))?.isInvalid, true)  // key
        XCTAssertEqual(assertWireError(try TXTRecord.decode(rdata([[0x61, 0x3d, 0xc3, 0x28]])))?.isInvalid, true)  // value
        XCTAssertEqual(assertWireError(try TXTRecord.decode(rdata([[0xc3]])))?.isInvalid, true)  // key-only
    }

    func testTruncatedRDATA() {
        let enc = rdata([bytes("a=1"), bytes("bb=22")])
        for n in 0..<enc.count {
            let prefix = Array(enc.prefix(n))
            // Prefixes ending exactly on an entry boundary are valid shorter records.
            if n == 0 || n == 4 { XCTAssertNoThrow(try TXTRecord.decode(prefix)); continue }
            XCTAssertEqual(assertWireError(try TXTRecord.decode(prefix))?.isTruncated, true, "prefix \(n)")
        }
    }
}

final class AdvertisementTests: XCTestCase {
    let id = try! PeerID(bytes: Array(0..<20))

    func testTXTRoundTrip() throws {
        let info = try DiscoveryInfo(["room": "kitchen", "v": "2"])
        let ad = try Advertisement(peerID: id, displayName: "Alice", info: info)
        let txt = ad.txt
        XCTAssertEqual(txt["_id"], id.description)
        XCTAssertEqual(txt["_dn"], "Alice")
        XCTAssertEqual(txt["_pv"], "1")
        XCTAssertEqual(txt["room"], "kitchen")
        XCTAssertEqual(try Advertisement(txt: txt), ad)
        // And through RDATA.
        XCTAssertEqual(try Advertisement(txt: TXTRecord.decode(TXTRecord.encode(txt))), ad)
    }

    func testMissingKeys() {
        let full = ["_id": id.description, "_dn": "A", "_pv": "1"]
        for k in full.keys {
            var t = full
            t[k] = nil
            XCTAssertEqual(assertWireError(try Advertisement(txt: t))?.isInvalid, true, "without \(k)")
        }
    }

    func testBadProtocolVersion() {
        for pv in ["0", "-1", "abc", "", "1000", "1.0"] {
            let t = ["_id": id.description, "_dn": "A", "_pv": pv]
            XCTAssertEqual(assertWireError(try Advertisement(txt: t))?.isInvalid, true, pv)
        }
        XCTAssertEqual(try Advertisement(txt: ["_id": id.description, "_dn": "A", "_pv": "999"]).protocolVersion, 999)
    }

    func testBadPeerIDAndName() {
        XCTAssertNotNil(assertWireError(try Advertisement(txt: ["_id": "short", "_dn": "A", "_pv": "1"])))
        XCTAssertNotNil(assertWireError(try Advertisement(txt: ["_id": id.description, "_dn": "", "_pv": "1"])))
        XCTAssertNotNil(assertWireError(try Advertisement(txt: ["_id": id.description, "_dn": "a\u{0}b", "_pv": "1"])))
        XCTAssertNotNil(assertWireError(try Advertisement(txt: ["_id": id.description, "_dn": String(repeating: "x", count: 64), "_pv": "1"])))
    }

    func testUnknownUnderscoreKeysIgnored() throws {
        let t = ["_id": id.description, "_dn": "A", "_pv": "1", "_future": "x", "_": "y", "app": "1"]
        let ad = try Advertisement(txt: t)
        XCTAssertEqual(ad.info.entries, ["app": "1"])
    }

    func testFrameworkKeysReadInAnyCase() throws {
        let ad = try Advertisement(txt: ["_ID": id.description, "_Dn": "A", "_PV": "1", "Room": "x"])
        XCTAssertEqual(ad.peerID, id)
        XCTAssertEqual(ad.displayName, "A")
        XCTAssertEqual(ad.info.entries, ["Room": "x"])
    }

    func testApplicationKeysStartingWithUnderscoreRejectedWhenPublishing() {
        XCTAssertEqual(assertWireError(try DiscoveryInfo(["_id": "evil"]))?.isInvalid, true)
    }

    func testOversizedAppInfoFromNetworkRejected() {
        var t = ["_id": id.description, "_dn": "A", "_pv": "1"]
        for i in 0..<3 { t["k\(i)"] = String(repeating: "v", count: 200) }
        XCTAssertEqual(assertWireError(try Advertisement(txt: t))?.isLimitExceeded, true)
    }

    func testDisplayNameValidation() throws {
        XCTAssertNoThrow(try Advertisement.validate(displayName: String(repeating: "é", count: 31)))  // 62 bytes
        XCTAssertEqual(assertWireError(try Advertisement.validate(displayName: String(repeating: "é", count: 32)))?.isLimitExceeded, true)
        XCTAssertEqual(assertWireError(try Advertisement.validate(displayName: "tab\there"))?.isInvalid, true)
        XCTAssertNoThrow(try Advertisement.validate(displayName: "Zoë's 📱"))
    }

    func testPrologue() {
        XCTAssertEqual(PeerLinkProtocol.prologue, bytes("peerlink/1"))
    }
}
