import Foundation
import PeerLink
import PeerLinkCore
import PeerLinkWire

/// What the host of a Wi-Fi Direct group tells the joiner in LINK_SETUP `ready`: the group's
/// credentials and where the host listens. Only ever sent inside the Noise-secured session.
/// Parameters: `kind` (p2p | softap), `ssid`, `psk`, `freq` (u16 MHz), `bssid` (6 bytes),
/// `owner` (6 bytes, optional: the owner's P2P device address), `addr` (the host's IPv6
/// link-local address, no zone), `port` (u16).
struct WiFiDirectParameters: Equatable, Sendable {
    var credentials: WiFiCredentials
    var address: String
    var port: UInt16

    var encoded: [LinkSetup.Parameter] {
        var p: [LinkSetup.Parameter] = [
            .init("kind", string: credentials.kind.rawValue),
            .init("ssid", string: credentials.ssid),
            .init("psk", string: credentials.passphrase),
            .init("freq", [UInt8(credentials.frequency >> 8 & 0xff), UInt8(credentials.frequency & 0xff)]),
            .init("bssid", credentials.bssid.bytes),
        ]
        if let owner = credentials.ownerDeviceAddress { p.append(.init("owner", owner.bytes)) }
        p.append(.init("addr", string: address))
        p.append(.init("port", [UInt8(port >> 8), UInt8(port & 0xff)]))
        return p
    }

    /// Reads and checks the parameters from the peer; every fault is named.
    init(_ m: [LinkSetup.Parameter]) throws {
        func value(_ n: String) throws -> [UInt8] {
            guard let v = m.first(where: { $0.name == n })?.value else { throw WiFiDirectParameterError("'\(n)' is missing") }
            return v
        }
        func text(_ n: String) throws -> String {
            guard let s = String(validating: try value(n), as: UTF8.self) else { throw WiFiDirectParameterError("'\(n)' is not UTF-8") }
            return s
        }
        func u16(_ n: String) throws -> UInt16 {
            let v = try value(n)
            guard v.count == 2 else { throw WiFiDirectParameterError("'\(n)' is \(v.count) bytes, not 2") }
            return UInt16(v[0]) << 8 | UInt16(v[1])
        }
        func mac(_ v: [UInt8], _ n: String) throws -> MACAddress {
            guard let a = MACAddress(bytes: v) else { throw WiFiDirectParameterError("'\(n)' is \(v.count) bytes, not 6") }
            return a
        }
        guard let kind = WiFiCredentials.Kind(rawValue: try text("kind")) else { throw WiFiDirectParameterError("'kind' is not known") }
        let owner = try m.first(where: { $0.name == "owner" }).map { try mac($0.value, "owner") }
        let creds = WiFiCredentials(kind: kind, ssid: try text("ssid"), passphrase: try text("psk"), frequency: Int(try u16("freq")),
                                    bssid: try mac(try value("bssid"), "bssid"), ownerDeviceAddress: owner)
        do { try creds.validate() } catch { throw WiFiDirectParameterError("\(error)") }
        let address = try text("addr")
        guard address.lowercased().hasPrefix("fe80:"), !address.contains("%"), (try? IPSocketAddress(host: address, port: 1)) != nil else {
            throw WiFiDirectParameterError("'addr' \(address) is not an IPv6 link-local address")
        }
        let port = try u16("port")
        guard port != 0 else { throw WiFiDirectParameterError("'port' is 0") }
        self.init(credentials: creds, address: address, port: port)
    }

    init(credentials: WiFiCredentials, address: String, port: UInt16) {
        self.credentials = credentials
        self.address = address
        self.port = port
    }
}

/// A host's Wi-Fi Direct parameters that cannot be used, and why.
struct WiFiDirectParameterError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = "the host's Wi-Fi Direct parameters are unusable: \(d)" }
}
