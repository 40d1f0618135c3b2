import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest
import PeerLinkCore
import PeerLinkWire

/// The SDP record registered through ProfileManager1 (PROTOCOL §14.1): well-formed XML that
/// carries the service UUID, the RFCOMM channel and the L2CAP PSM.
final class BluetoothServiceRecordTests: XCTestCase {
    /// attribute id → the values (uuid/uint8/uint16/text) inside it, in document order.
    final class Attributes: NSObject, XMLParserDelegate {
        var byID: [String: [String]] = [:]
        private var current: String?
        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            if name == "attribute" { current = attributes["id"]; byID[current ?? "?"] = [] }
            if let current, let v = attributes["value"] { byID[current, default: []].append("\(name):\(v)") }
        }
    }

    func parse(_ xml: String) throws -> [String: [String]] {
        let parser = XMLParser(data: Data(xml.utf8))
        let attrs = Attributes()
        parser.delegate = attrs
        XCTAssertTrue(parser.parse(), "well-formed XML: \(String(describing: parser.parserError))")
        return attrs.byID
    }

    func testRecordWithChannelAndPSM() throws {
        let service = try ServiceType("field-demo")
        let xml = try XCTUnwrap(BluetoothServiceRecord.xml(service: service, rfcommChannel: 5, l2capPSM: 0x1003))
        let a = try parse(xml)
        XCTAssertEqual(a["0x0001"], ["uuid:5005e2d7-5a6d-8498-9881-3c13b25f9416"], "the §14.1 UUID of field-demo")
        XCTAssertEqual(a["0x0004"], ["uuid:0x0100", "uuid:0x0003", "uint8:0x05"], "L2CAP, then RFCOMM channel 5")
        XCTAssertEqual(a["0x000d"], ["uuid:0x0100", "uint16:0x1003"], "the L2CAP PSM as an additional protocol")
        XCTAssertEqual(a["0x0005"], ["uuid:0x1002"], "public browse root")
        XCTAssertEqual(a["0x0100"], ["text:PeerLink field-demo"])
    }

    func testRecordWithOnlyOneTransport() throws {
        let service = try ServiceType("field-demo")
        let l2cap = try parse(try XCTUnwrap(BluetoothServiceRecord.xml(service: service, rfcommChannel: nil, l2capPSM: 0x1001)))
        XCTAssertEqual(l2cap["0x0004"], ["uuid:0x0100", "uint16:0x1001"])
        XCTAssertNil(l2cap["0x000d"])
        let rfcomm = try parse(try XCTUnwrap(BluetoothServiceRecord.xml(service: service, rfcommChannel: 30, l2capPSM: nil)))
        XCTAssertEqual(rfcomm["0x0004"], ["uuid:0x0100", "uuid:0x0003", "uint8:0x1e"])
        XCTAssertNil(BluetoothServiceRecord.xml(service: service, rfcommChannel: nil, l2capPSM: nil), "nothing to publish")
    }
}
