import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkDBus
@testable import PeerLinkWiFiDirect

/// The Wi-Fi edge's pure parts on the host: addresses, credentials, wpa_supplicant's property
/// dictionaries (well-formed and malformed), /proc/net/if_inet6, netlink attributes.
final class WiFiDirectParsingTests: XCTestCase {
    // MARK: addresses and credentials

    func testMACAddressParsesAndFormats() throws {
        let a = try XCTUnwrap(MACAddress("46:00:00:00:0A:ff"))
        XCTAssertEqual(a.description, "46:00:00:00:0a:ff")
        XCTAssertEqual(a.pathComponent, "460000000aff")
        XCTAssertEqual(MACAddress(bytes: [2, 0, 0, 0, 1, 0])?.description, "02:00:00:00:01:00")
        for bad in ["", "46:00:00:00:00", "46:00:00:00:00:00:00", "46-00-00-00-00-00", "4g:00:00:00:00:00", "460:0:00:00:00:00", "46:00:00:00:00:0"] {
            XCTAssertNil(MACAddress(bad), bad)
        }
        XCTAssertNil(MACAddress(bytes: [1, 2, 3]))
        let json = try JSONEncoder().encode(a)
        XCTAssertEqual(String(decoding: json, as: UTF8.self), "\"46:00:00:00:0a:ff\"")
        XCTAssertThrowsError(try JSONDecoder().decode(MACAddress.self, from: Data("\"nope\"".utf8)))
    }

    func good() -> WiFiCredentials {
        WiFiCredentials(kind: .p2pGroup, ssid: "DIRECT-2e", passphrase: "cHoaVX12", frequency: 2412,
                        bssid: MACAddress("46:00:00:00:00:00")!, ownerDeviceAddress: MACAddress("42:00:00:00:00:00"))
    }

    func testCredentialsValidation() throws {
        XCTAssertNoThrow(try good().validate())
        func rejects(_ change: (inout WiFiCredentials) -> Void, _ word: String, line: UInt = #line) {
            var c = good()
            change(&c)
            XCTAssertThrowsError(try c.validate(), line: line) { e in
                guard case let WiFiError.invalidCredentials(why) = e else { return XCTFail("\(e)", line: line) }
                XCTAssertTrue(why.contains(word), why, line: line)
            }
        }
        rejects({ $0.ssid = "" }, "SSID")
        rejects({ $0.ssid = String(repeating: "x", count: 33) }, "SSID")
        rejects({ $0.ssid = "DIRECT-\u{1}" }, "printable")
        rejects({ $0.ssid = "café" }, "printable")
        rejects({ $0.passphrase = "short" }, "8–63")
        rejects({ $0.passphrase = String(repeating: "p", count: 64) }, "8–63")
        rejects({ $0.passphrase = "pass\nword" }, "printable")
        rejects({ $0.frequency = 2413 }, "channel")
        rejects({ $0.frequency = 0 }, "channel")
        rejects({ $0.frequency = -2412 }, "channel")
        rejects({ $0.bssid = MACAddress("00:00:00:00:00:00")! }, "unicast")
        rejects({ $0.bssid = MACAddress("01:00:5e:00:00:01")! }, "unicast")
        rejects({ $0.ownerDeviceAddress = MACAddress("ff:ff:ff:ff:ff:ff") }, "device address")
        var ok = good()
        ok.ownerDeviceAddress = nil
        ok.frequency = 5745
        XCTAssertNoThrow(try ok.validate())
        // A round trip through JSON keeps everything; a bad MAC in JSON is refused.
        let data = try JSONEncoder().encode(good())
        XCTAssertEqual(try JSONDecoder().decode(WiFiCredentials.self, from: data), good())
        let broken = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "46:00:00:00:00:00", with: "46:00")
        XCTAssertThrowsError(try JSONDecoder().decode(WiFiCredentials.self, from: Data(broken.utf8)))
    }

    func testChannels() {
        XCTAssertEqual(WiFiChannels.channel(ofFrequency: 2412), 1)
        XCTAssertEqual(WiFiChannels.channel(ofFrequency: 2437), 6)
        XCTAssertEqual(WiFiChannels.channel(ofFrequency: 2484), 14)
        XCTAssertEqual(WiFiChannels.channel(ofFrequency: 5180), 36)
        XCTAssertEqual(WiFiChannels.channel(ofFrequency: 5745), 149)
        XCTAssertEqual(WiFiChannels.channel(ofFrequency: 5955), 1)
        for bad in [2400, 2411, 2475, 5190, 5000, 9000] { XCTAssertNil(WiFiChannels.channel(ofFrequency: bad), "\(bad)") }
    }

    // MARK: wpa_supplicant properties

    func bytes(_ b: [UInt8]) -> DBusValue { .variant(.array(b.map { .byte($0) })) }

    func groupProps() -> [String: DBusValue] {
        ["Role": .variant(.string("GO")), "SSID": bytes(Array("DIRECT-2e".utf8)), "BSSID": bytes([0x46, 0, 0, 0, 0, 0]),
         "Frequency": .variant(.uint16(2412)), "Passphrase": .variant(.string("cHoaVX12")), "Members": .variant(.array([]))]
    }

    func testGroupProperties() throws {
        let g = try WPAProperties.group(groupProps())
        XCTAssertEqual(g, WPAGroupInfo(role: "GO", ssid: "DIRECT-2e", bssid: MACAddress("46:00:00:00:00:00")!, frequency: 2412, passphrase: "cHoaVX12"))
        var p = groupProps()
        p["Passphrase"] = nil
        XCTAssertEqual(try WPAProperties.group(p).passphrase, "", "a client may not know the passphrase")
        p["Frequency"] = nil
        XCTAssertNil(try WPAProperties.group(p).frequency, "wpa_supplicant 2.10 cannot read a client's Frequency")
        p["BSSID"] = .variant(.emptyArray(elementSignature: "y"))
        XCTAssertTrue(try WPAProperties.group(p).bssid.isZero, "an empty BSSID is not known yet, not malformed")
        p["BSSID"] = nil
        XCTAssertTrue(try WPAProperties.group(p).bssid.isZero, "nor is a missing one (a P2P client's getter that failed)")
    }

    func testMalformedGroupPropertiesAreRejectedWithWhat() {
        func rejects(_ change: (inout [String: DBusValue]) -> Void, _ word: String, line: UInt = #line) {
            var p = groupProps()
            change(&p)
            XCTAssertThrowsError(try WPAProperties.group(p), line: line) { e in
                guard case let WiFiError.malformedReply(what) = e else { return XCTFail("\(e)", line: line) }
                XCTAssertTrue(what.contains(word), what, line: line)
            }
        }
        rejects({ $0["Role"] = nil }, "Role")
        rejects({ $0["Role"] = .variant(.int32(1)) }, "Role")
        rejects({ $0["SSID"] = nil }, "SSID")
        rejects({ $0["SSID"] = .variant(.string("DIRECT-2e")) }, "SSID")
        rejects({ $0["SSID"] = self.bytes([]) }, "SSID")
        rejects({ $0["SSID"] = self.bytes([0xff, 0xfe]) }, "UTF-8")
        rejects({ $0["BSSID"] = self.bytes([1, 2, 3, 4, 5]) }, "BSSID")
        rejects({ $0["BSSID"] = .variant(.array([.string("x")])) }, "BSSID")
        rejects({ $0["Frequency"] = .variant(.string("2412")) }, "Frequency")
        rejects({ $0["Frequency"] = .variant(.uint16(0)) }, "Frequency")
        rejects({ $0["Passphrase"] = .variant(.array([])) }, "Passphrase")
    }

    func testInterfaceProperties() throws {
        let caps: DBusValue = .variant(.array([
            .dictEntry(.string("Modes"), .variant(.array([.string("infrastructure"), .string("ap"), .string("p2p")]))),
            .dictEntry(.string("MaxScanSSID"), .variant(.int32(4))),
        ]))
        let info = try WPAProperties.interface(["Ifname": .variant(.string("wlan0")), "State": .variant(.string("4way_handshake")), "Capabilities": caps])
        XCTAssertEqual(info, WPAInterfaceInfo(ifname: "wlan0", state: .fourWayHandshake, modes: ["infrastructure", "ap", "p2p"]))
        XCTAssertNil(try WPAProperties.interface(["Ifname": .string("wlan0"), "State": .string("completed")]).modes)
        XCTAssertEqual(try WPAProperties.interface(["Ifname": .string("wlan0"), "State": .string("something-new")]).state, .unknown)
        XCTAssertThrowsError(try WPAProperties.interface(["State": .string("completed")]))
        XCTAssertThrowsError(try WPAProperties.interface(["Ifname": .string(""), "State": .string("completed")]))
        XCTAssertThrowsError(try WPAProperties.interface(["Ifname": .string("wlan0")]))
        XCTAssertThrowsError(try WPAProperties.interface(["Ifname": .string("wlan0"), "State": .string("completed"), "Capabilities": .variant(.string("ap"))]))
        let badModes: DBusValue = .variant(.array([.dictEntry(.string("Modes"), .variant(.array([.int32(1)])))]))
        XCTAssertThrowsError(try WPAProperties.interface(["Ifname": .string("wlan0"), "State": .string("completed"), "Capabilities": badModes])) { e in
            XCTAssertTrue("\(e)".contains("Modes"), "\(e)")
        }
    }

    func testGroupSignals() throws {
        let ok: [DBusValue] = [.array([
            .dictEntry(.string("interface_object"), .variant(.objectPath("/fi/w1/wpa_supplicant1/Interfaces/1"))),
            .dictEntry(.string("role"), .variant(.string("GO"))),
            .dictEntry(.string("persistent"), .variant(.bool(false))),
            .dictEntry(.string("group_object"), .variant(.objectPath("/fi/w1/wpa_supplicant1/Interfaces/1/Groups/SD"))),
        ])]
        XCTAssertEqual(try WPAProperties.groupSignal(ok),
                       WPAGroupSignal(interfaceObject: "/fi/w1/wpa_supplicant1/Interfaces/1", groupObject: "/fi/w1/wpa_supplicant1/Interfaces/1/Groups/SD", role: "GO"))
        XCTAssertThrowsError(try WPAProperties.groupSignal([]))
        XCTAssertThrowsError(try WPAProperties.groupSignal([.string("x")]))
        XCTAssertThrowsError(try WPAProperties.groupSignal([.array([.string("not an entry")])]))
        XCTAssertThrowsError(try WPAProperties.groupSignal([.array([.dictEntry(.string("role"), .variant(.string("GO")))])]))
        XCTAssertThrowsError(try WPAProperties.groupSignal([.array([.dictEntry(.int32(1), .variant(.string("GO")))])]))
        XCTAssertThrowsError(try WPAProperties.groupSignal(ok + ok), "two dictionaries")
    }

    func testStateTable() {
        XCTAssertEqual(WPAProperties.changedState([.array([.dictEntry(.string("State"), .variant(.string("completed")))])]), .completed)
        XCTAssertNil(WPAProperties.changedState([.array([.dictEntry(.string("Scanning"), .variant(.bool(true)))])]))
        XCTAssertNil(WPAProperties.changedState([]))
        XCTAssertTrue(WPAState.completed.isConnected)
        for s in WPAState.allCases where s != .completed { XCTAssertFalse(s.isConnected, s.rawValue) }
        XCTAssertTrue(WPAState(text: "4way_handshake").isConnecting)
        XCTAssertTrue(WPAState.disconnected.endsLink)
        XCTAssertFalse(WPAState.completed.endsLink)
        XCTAssertFalse(WPAState.associating.endsLink)
    }

    // MARK: link-local addresses

    let ifInet6 = """
        00000000000000000000000000000001 01 80 10 80       lo
        fe80000000000000440000fffe000000 05 40 20 c0 p2p-wlan0-0
        fe80000000000000000000fffe000100 04 40 20 80    wlan1
        fe80000000000000440000fffe000100 06 40 20 88 p2p-wlan1-0
        fe80000000000000440000fffe0001zz 07 40 20 80 broken
        fe80000000000000440000fffe000200 08 40 20 c4 p2p-wlan0-1
        fe80000000000000440000fffe000300 09 40 20 8c p2p-wlan0-2
        short line
        """

    func testLinkLocalParsing() {
        let all = IPv6LinkLocal.parse(ifInet6)
        XCTAssertEqual(all.count, 6, "the malformed lines are skipped")
        XCTAssertEqual(all[1].address, "fe80::4400:ff:fe00:0")
        XCTAssertEqual(all[1].interfaceIndex, 5)
        XCTAssertNil(IPv6LinkLocal.usable(on: "p2p-wlan0-0", in: ifInet6), "tentative (0x40)")
        XCTAssertEqual(IPv6LinkLocal.usable(on: "wlan1", in: ifInet6), "fe80::ff:fe00:100")
        XCTAssertNil(IPv6LinkLocal.usable(on: "p2p-wlan1-0", in: ifInet6), "DAD failed (0x08)")
        XCTAssertNil(IPv6LinkLocal.usable(on: "lo", in: ifInet6), "not link scope")
        XCTAssertTrue(IPv6LinkLocal.status(of: "p2p-wlan0-0", in: ifInet6).contains("tentative"))
        XCTAssertTrue(IPv6LinkLocal.status(of: "p2p-wlan1-0", in: ifInet6).contains("DAD failed"))
        XCTAssertTrue(IPv6LinkLocal.status(of: "wlan9", in: ifInet6).contains("no IPv6 link-local"))
        // Optimistic (0x04 with tentative 0x40): a host may be dialled on it during DAD
        // (RFC 4429); a joiner, which dials, waits for DAD to end.
        XCTAssertEqual(IPv6LinkLocal.usable(on: "p2p-wlan0-1", in: ifInet6, optimistic: true), "fe80::4400:ff:fe00:200")
        XCTAssertNil(IPv6LinkLocal.usable(on: "p2p-wlan0-1", in: ifInet6))
        XCTAssertNil(IPv6LinkLocal.usable(on: "p2p-wlan0-0", in: ifInet6, optimistic: true), "tentative, not optimistic")
        XCTAssertEqual(IPv6LinkLocal.usable(on: "wlan1", in: ifInet6, optimistic: true), "fe80::ff:fe00:100")
        XCTAssertTrue(IPv6LinkLocal.status(of: "p2p-wlan0-1", in: ifInet6).contains("optimistic"))
        XCTAssertNil(IPv6LinkLocal.usable(on: "p2p-wlan0-2", in: ifInet6, optimistic: true), "optimistic, but DAD failed (0x08)")
        XCTAssertTrue(IPv6LinkLocal.status(of: "p2p-wlan0-2", in: ifInet6).contains("DAD failed"))
        // Known, usable or not (a host that hands its address out during DAD).
        XCTAssertEqual(IPv6LinkLocal.knownAddress(on: "p2p-wlan0-0", in: ifInet6)?.state, .inDAD)
        XCTAssertEqual(IPv6LinkLocal.knownAddress(on: "p2p-wlan0-1", in: ifInet6)?.state, .optimistic)
        XCTAssertEqual(IPv6LinkLocal.knownAddress(on: "wlan1", in: ifInet6)?.state, .usable)
        XCTAssertNil(IPv6LinkLocal.knownAddress(on: "p2p-wlan1-0", in: ifInet6), "DAD failed")
        XCTAssertNil(IPv6LinkLocal.knownAddress(on: "lo", in: ifInet6), "not link scope")
        XCTAssertEqual(LinkLocalSockets.scoped("fe80::1", interface: "wlan0"), "fe80::1%wlan0")
        XCTAssertEqual(LinkLocalSockets.scoped("fe80::1%eth0", interface: "wlan0"), "fe80::1%wlan0")
    }

    // MARK: netlink

    func testNetlinkRoundTripAndTruncation() {
        let req = NetlinkMessages.request(family: 28, command: 5, flags: NetlinkMessages.dumpFlags, sequence: 7,
                                          attributes: [.u32(1, 3), .string(4, "wlan0"), .flag(174)])
        XCTAssertEqual(req.count % 4, 0)
        XCTAssertEqual(NetlinkMessages.le(req, 0, 4), UInt64(req.count))
        let msgs = NetlinkMessages.messages(req)
        XCTAssertEqual(msgs.count, 1)
        XCTAssertEqual(msgs[0].command, 5)
        XCTAssertEqual(msgs[0].sequence, 7)
        XCTAssertEqual(msgs[0].attributes.map(\.type), [1, 4, 174])
        XCTAssertEqual(msgs[0].attributes[0].u32, 3)
        XCTAssertEqual(msgs[0].attributes[1].string, "wlan0")
        // Truncated: the header says more than there is.
        XCTAssertEqual(NetlinkMessages.messages(Array(req.dropLast(4))).count, 0)
        XCTAssertEqual(NetlinkMessages.messages([1, 2, 3]).count, 0)
        // An attribute whose length runs past the end stops the parse, keeping what came before.
        let attrs = NetlinkMessages.encode(.u32(1, 9)) + [200, 0, 2, 0, 1, 2, 3, 4]
        XCTAssertEqual(NetlinkMessages.attributes(attrs[...]).map(\.type), [1])
        XCTAssertEqual(NetlinkMessages.attributes([3, 0, 1, 0][...]).count, 0, "length below the header")
        XCTAssertNil(NetlinkMessages.Attribute(type: 1, payload: [1, 2]).u32)
        // An error message carries its code.
        var err = NetlinkMessages.bytesLE(20, 4) + NetlinkMessages.bytesLE(2, 2) + [0, 0] + NetlinkMessages.bytesLE(9, 4) + [0, 0, 0, 0]
        err += NetlinkMessages.bytesLE(UInt64(UInt32(bitPattern: -19)), 4)
        XCTAssertEqual(NetlinkMessages.messages(err).first?.errorCode, -19)
    }

    func testNl80211SplitDumpMerges() {
        func msg(_ attrs: [NetlinkMessages.Attribute]) -> NetlinkMessages.Message {
            .init(type: 28, flags: 2, sequence: 1, command: 3, attributes: attrs, errorCode: nil)
        }
        let types = NetlinkMessages.Attribute(type: 32, payload: [2, 3, 8, 9].flatMap { NetlinkMessages.encode(.flag($0)) })
        let phys = Nl80211.mergePhys([
            msg([.u32(1, 0), .string(2, "phy0")]),
            msg([.u32(1, 0), types]),
            msg([.u32(1, 2), .string(2, "phy2"), NetlinkMessages.Attribute(type: 32, payload: NetlinkMessages.encode(.flag(2)))]),
            msg([.string(2, "no index")]),
        ])
        XCTAssertEqual(phys.map(\.name), ["phy0", "phy2"])
        XCTAssertEqual(phys[0].interfaceTypes, [.station, .accessPoint, .p2pClient, .p2pGroupOwner])
        XCTAssertEqual(phys[1].interfaceTypes, [.station])
        let dev = Nl80211.device(msg([.u32(1, 0), .u32(5, 10), .bytes(6, [0x42, 0, 0, 0, 0, 0])]))
        XCTAssertEqual(dev, WirelessDevice(wiphy: 0, interfaceName: nil, type: .p2pDevice, address: MACAddress("42:00:00:00:00:00")))
        XCTAssertNil(Nl80211.device(msg([.string(4, "wlan0")])), "no wiphy")
        let devices = [
            WirelessDevice(wiphy: 0, interfaceName: "wlan0", type: .station, address: MACAddress("02:00:00:00:00:00")),
            WirelessDevice(wiphy: 0, interfaceName: nil, type: .p2pDevice, address: MACAddress("42:00:00:00:00:00")),
            WirelessDevice(wiphy: 1, interfaceName: "wlan1", type: .station, address: MACAddress("02:00:00:00:01:00")),
        ]
        XCTAssertEqual(WiFiRadios.p2pDevice(for: "wlan0", devices: devices), .thisRadio)
        XCTAssertEqual(WiFiRadios.p2pDevice(for: "wlan1", devices: devices), .otherRadios(["wlan0"]))
        XCTAssertEqual(WiFiRadios.p2pDevice(for: "wlan1", devices: nil), .unknown)
        // Seen from wpa_supplicant processes: the P2P device on phy0 is the one of the process
        // that manages wlan0; another process has none yet and makes its own.
        XCTAssertEqual(WiFiRadios.p2pDevice(for: "wlan1", devices: devices, supplicantInterfaces: ["wlan0", "wlan1"]), .otherRadios(["wlan0"]))
        XCTAssertEqual(WiFiRadios.p2pDevice(for: "wlan1", devices: devices, supplicantInterfaces: ["wlan1"]), .none)
        XCTAssertEqual(WiFiRadios.p2pDevice(for: "wlan1", devices: devices, supplicantInterfaces: []), .none)
        XCTAssertEqual(WiFiRadios.p2pDevice(for: "wlan0", devices: devices, supplicantInterfaces: []), .thisRadio)
        XCTAssertEqual(WiFiRadios.p2pDevice(for: "wlan5", devices: devices, supplicantInterfaces: []), .unknown)
        XCTAssertEqual(WiFiRadios.p2pDeviceAddress(for: "wlan0", devices: devices), MACAddress("42:00:00:00:00:00"))
        XCTAssertNil(WiFiRadios.p2pDeviceAddress(for: "wlan1", devices: devices))
        XCTAssertEqual(WiFiRadios.p2pDeviceAddress(for: "wlan1", devices: [devices[2]]), MACAddress("02:00:00:00:01:00"),
                       "without a P2P-device wdev the radio's own address is the device address")
    }

    // MARK: interface combinations

    /// `NL80211_ATTR_INTERFACE_COMBINATIONS` as the kernel nests it.
    static func combinationsAttribute(_ combos: [(limits: [(max: UInt32, types: [UInt16])], total: UInt32, channels: UInt32)]) -> NetlinkMessages.Attribute {
        func nest(_ type: UInt16, _ attrs: [NetlinkMessages.Attribute]) -> NetlinkMessages.Attribute {
            NetlinkMessages.Attribute(type: type, payload: attrs.flatMap(NetlinkMessages.encode))
        }
        return nest(120, combos.enumerated().map { i, c in
            nest(UInt16(i + 1), [
                nest(1, c.limits.enumerated().map { k, l in nest(UInt16(k + 1), [.u32(1, l.max), nest(2, l.types.map { .flag($0) })]) }),
                .u32(2, c.total), .u32(4, c.channels),
            ])
        })
    }

    func testInterfaceCombinations() throws {
        // mac80211_hwsim: #{ IBSS } <= 1, #{ managed, AP, mesh point, P2P-client, P2P-GO } <= 2048, #{ P2P-device } <= 1, total <= 2050
        let hwsim = Self.combinationsAttribute([(limits: [(1, [1]), (2048, [2, 3, 7, 8, 9]), (1, [10])], total: 2050, channels: 1)])
        let combos = Nl80211.combinations(hwsim)
        XCTAssertEqual(combos.count, 1)
        XCTAssertTrue(combos[0].allows([.station, .p2pGroupOwner, .p2pDevice]))
        XCTAssertFalse(combos[0].allows([.p2pDevice, .p2pDevice]), "one P2P device")
        XCTAssertEqual(Nl80211.groupBesideStation(combos), true)
        XCTAssertEqual(combos[0].description, "#{ IBSS } <= 1, #{ managed, AP, mesh point, P2P-client, P2P-GO } <= 2048, #{ P2P-device } <= 1, total <= 2050, #channels <= 1")
        // A driver that runs one interface at a time whatever its type.
        let single = Nl80211.combinations(Self.combinationsAttribute([(limits: [(1, [2, 3, 8, 9])], total: 1, channels: 1)]))
        XCTAssertEqual(Nl80211.groupBesideStation(single), false)
        // Station beside a P2P client only (no GO): not enough for PeerLink, which may own the group.
        let clientOnly = Nl80211.combinations(Self.combinationsAttribute([(limits: [(1, [2]), (1, [8])], total: 2, channels: 1)]))
        XCTAssertEqual(Nl80211.groupBesideStation(clientOnly), false)
        XCTAssertNil(Nl80211.groupBesideStation(nil))
        XCTAssertNil(Nl80211.groupBesideStation([]))
        // Malformed entries are left out: no total, no limits, a limit of 0, unknown types only.
        let bad = Self.combinationsAttribute([(limits: [(2, [2, 9])], total: 0, channels: 1), (limits: [], total: 2, channels: 1),
                                              (limits: [(0, [2, 9])], total: 2, channels: 1), (limits: [(2, [99])], total: 2, channels: 1)])
        XCTAssertEqual(Nl80211.combinations(bad), [])
        // They reach the phy through the split dump.
        let msg = NetlinkMessages.Message(type: 28, flags: 2, sequence: 1, command: 3, attributes: [.u32(1, 0), hwsim], errorCode: nil)
        XCTAssertEqual(Nl80211.mergePhys([msg]).first?.combinations, combos)
    }
}
