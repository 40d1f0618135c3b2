import PeerLinkWire

/// The SDP service record of a PeerLink node on BR/EDR (docs/PROTOCOL.md §14.1), in the XML
/// form BlueZ's `ProfileManager1.RegisterProfile` takes as its `ServiceRecord` option:
///
/// - ServiceClassIDList (0x0001): the service UUID;
/// - ProtocolDescriptorList (0x0004): L2CAP, RFCOMM with the node's channel;
/// - AdditionalProtocolDescriptorLists (0x000D): L2CAP with the node's PSM;
/// - BrowseGroupList (0x0005): the public browse root, so a plain SDP browse lists it;
/// - ServiceName (0x0100): "PeerLink <service type>".
package enum BluetoothServiceRecord {
    /// The record's XML. A nil channel or PSM leaves that protocol out; a record needs one.
    package static func xml(service: ServiceType, rfcommChannel: UInt8?, l2capPSM: UInt16?) -> String? {
        guard rfcommChannel != nil || l2capPSM != nil else { return nil }
        let uuid = BluetoothServiceUUID.string(for: service)
        var attributes = [
            attribute(0x0001, "<sequence><uuid value=\"\(uuid)\"/></sequence>"),
        ]
        if let rfcommChannel {
            attributes.append(attribute(0x0004, "<sequence><sequence><uuid value=\"0x0100\"/></sequence>"
                                        + "<sequence><uuid value=\"0x0003\"/><uint8 value=\"\(hex(rfcommChannel, 2))\"/></sequence></sequence>"))
        } else if let l2capPSM {
            attributes.append(attribute(0x0004, "<sequence><sequence><uuid value=\"0x0100\"/><uint16 value=\"\(hex(l2capPSM, 4))\"/></sequence></sequence>"))
        }
        if rfcommChannel != nil, let l2capPSM {
            attributes.append(attribute(0x000D, "<sequence><sequence><sequence><uuid value=\"0x0100\"/>"
                                        + "<uint16 value=\"\(hex(l2capPSM, 4))\"/></sequence></sequence></sequence>"))
        }
        attributes.append(attribute(0x0005, "<sequence><uuid value=\"0x1002\"/></sequence>"))
        attributes.append(attribute(0x0100, "<text value=\"\(escaped("PeerLink \(service.name)"))\"/>"))
        return "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<record>\n" + attributes.joined(separator: "\n") + "\n</record>\n"
    }

    private static func attribute(_ id: UInt16, _ body: String) -> String {
        "  <attribute id=\"\(hex(id, 4))\">\(body)</attribute>"
    }

    private static func hex<T: BinaryInteger>(_ v: T, _ digits: Int) -> String {
        let s = String(v, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, digits - s.count)) + s
    }

    /// XML attribute text: service type names are restricted (§13.1), but escape anyway.
    private static func escaped(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(c)
            }
        }
        return out
    }
}
