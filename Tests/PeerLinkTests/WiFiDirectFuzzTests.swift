import Foundation
import XCTest
@testable import PeerLink
@testable import PeerLinkDBus
@testable import PeerLinkWiFiDirect

/// Random and mutated input for every parser of the Wi-Fi edge that reads what the kernel,
/// wpa_supplicant or a peer sends: netlink messages and nl80211 attributes, /proc/net/if_inet6,
/// wpa_supplicant's D-Bus values, received credentials. None may crash; malformed input
/// gives nothing, a skipped entry or a clear error. Seeded, so a failure repeats.
final class WiFiDirectFuzzTests: XCTestCase {
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    var rng = SplitMix(state: 0x5EED_F00D)

    func bytes(_ max: Int) -> [UInt8] { (0..<Int.random(in: 0...max, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) } }

    /// `good` with a few bytes flipped, cut or inserted.
    func mutate(_ good: [UInt8]) -> [UInt8] {
        var b = good
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            switch Int.random(in: 0..<3, using: &rng) {
            case 0 where !b.isEmpty: b[Int.random(in: 0..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            case 1 where !b.isEmpty: b.removeLast(Int.random(in: 1...b.count, using: &rng))
            default: b.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...b.count, using: &rng))
            }
        }
        return b
    }

    func testNetlinkAndNl80211SurviveRandomAndMutatedBytes() {
        let combos = WiFiDirectParsingTests.combinationsAttribute([(limits: [(1, [1]), (2048, [2, 3, 8, 9]), (1, [10])], total: 2050, channels: 1)])
        let good = NetlinkMessages.request(family: 28, command: 3, flags: 2, sequence: 9,
                                           attributes: [.u32(1, 0), .string(2, "phy0"), combos, .u32(5, 2), .bytes(6, [2, 0, 0, 0, 0, 0])])
        XCTAssertEqual(Nl80211.mergePhys(NetlinkMessages.messages(good)).first?.combinations?.count, 1, "the unmutated message parses")
        for round in 0..<3000 {
            let input = round % 2 == 0 ? bytes(600) : mutate(good)
            let msgs = NetlinkMessages.messages(input)
            var consumed = 0
            for m in msgs {
                for a in m.attributes { consumed += a.payload.count; _ = a.nested; _ = a.string; _ = a.u64 }
                _ = Nl80211.device(m)
            }
            XCTAssertLessThanOrEqual(consumed, input.count, "attributes cannot hold more than the datagram")
            for phy in Nl80211.mergePhys(msgs) {
                for c in phy.combinations ?? [] {
                    XCTAssertGreaterThan(c.total, 0)
                    XCTAssertFalse(c.limits.isEmpty)
                    _ = c.allows([.station, .p2pGroupOwner, .p2pDevice])
                    _ = c.description
                }
            }
            _ = Nl80211.combinations(NetlinkMessages.Attribute(type: 120, payload: round % 2 == 0 ? bytes(300) : mutate(combos.payload)))
        }
    }

    func testIfInet6SurvivesGarbage() {
        let good = Array("fe80000000000000440000fffe000000 05 40 20 80 p2p-wlan0-0\n".utf8)
        for round in 0..<3000 {
            let text = String(decoding: round % 2 == 0 ? bytes(200) : mutate(good), as: UTF8.self)
            for a in IPv6LinkLocal.parse(text) {
                XCTAssertTrue(a.address.contains(":"), a.address)
                XCTAssertFalse(a.interface.isEmpty)
            }
            _ = IPv6LinkLocal.status(of: "p2p-wlan0-0", in: text)
        }
    }

    /// A random D-Bus value tree, as a hostile or buggy wpa_supplicant could send.
    func value(_ depth: Int = 0) -> DBusValue {
        let leaf = depth > 3
        switch Int.random(in: 0..<(leaf ? 6 : 10), using: &rng) {
        case 0: return .byte(UInt8.random(in: 0...255, using: &rng))
        case 1: return .int32(Int32.random(in: .min ... .max, using: &rng))
        case 2: return .uint16(UInt16.random(in: 0...UInt16.max, using: &rng))
        case 3: return .string(["", "GO", "client", "completed", "DIRECT-xy", "\u{0}", "/fi/w1"].randomElement(using: &rng) ?? "")
        case 4: return .objectPath("/fi/w1/wpa_supplicant1/Interfaces/\(Int.random(in: 0...3, using: &rng))")
        case 5: return .bool(Bool.random(using: &rng))
        case 6: return .variant(value(depth + 1))
        case 7: return .array((0..<Int.random(in: 0...6, using: &rng)).map { _ in value(depth + 1) })
        case 8:
            let keys = ["Role", "SSID", "BSSID", "Frequency", "Passphrase", "interface_object", "group_object", "role", "State", "Ifname",
                        "Capabilities", "Modes", "DisconnectReason", "AuthStatusCode", "AssocStatusCode", "status", "config_error"]
            return .array((0..<Int.random(in: 0...6, using: &rng)).map { _ in
                .dictEntry(.string(keys.randomElement(using: &rng) ?? "x"), value(depth + 1))
            })
        default: return .structure([value(depth + 1), value(depth + 1)])
        }
    }

    func testWpaSupplicantValuesNeverCrashAndFailWithWhat() {
        var accepted = 0
        for _ in 0..<5000 {
            let v = value()
            let dict = WPAProperties.dictionary(v) ?? [:]
            for result in [Result { try WPAProperties.group(dict) }.map { _ in () },
                           Result { try WPAProperties.interface(dict) }.map { _ in () },
                           Result { try WPAProperties.groupSignal([v]) }.map { _ in () }] {
                switch result {
                case .success: accepted += 1
                case let .failure(e):
                    guard case let WiFiError.malformedReply(what) = e else { return XCTFail("not a malformedReply: \(e)") }
                    XCTAssertFalse(what.isEmpty)
                }
            }
            _ = WPAProperties.changedState([v])
            _ = WPAProperties.strings(v)
            _ = WPAProperties.objectPaths(v)
            _ = WPAProperties.int(v)
            _ = WPAProperties.interfaceChange([v])
            _ = WPAProperties.p2pStatus([v])
            _ = WPAProperties.wpsConfigError([value(), v])
            _ = WPAProperties.interfaceAdded([value(), v])
            let signal = WPASignal(path: "/fi/w1/wpa_supplicant1/Interfaces/0", interface: WPASupplicantBus.p2pAPI,
                                   member: ["GroupFinished", "PropertiesChanged", "InterfaceRemoved", "PeerJoined", "NameOwnerChanged"]
                                       .randomElement(using: &rng) ?? "", args: [v, value()])
            for role in [WiFiRole.groupOwner, .p2pClient, .accessPoint, .station] {
                _ = WiFiGroupEvents.classify(signal, .init(role: role, radioPath: "/fi/w1/wpa_supplicant1/Interfaces/0",
                                                           groupInterfacePath: "/fi/w1/wpa_supplicant1/Interfaces/1", groupObject: nil))
            }
            // The set-up watch over random signals of every member it reads, on the radio,
            // a group interface and the root object.
            let members = ["PropertiesChanged", "PskMismatch", "GroupStarted", "GroupFormationFailure", "GONegotiationFailure",
                           "InvitationResult", "WpsFailed", "InterfaceAdded", "NameOwnerChanged"]
            let paths = ["/fi/w1/wpa_supplicant1/Interfaces/0", "/fi/w1/wpa_supplicant1/Interfaces/1", WPASupplicantBus.rootPath]
            let apis = [WPASupplicantBus.interfaceAPI, WPASupplicantBus.p2pAPI, WPASupplicantBus.service]
            for goal in [WiFiSetupWatch.Goal.network, .p2pGroup(role: "client"), .p2pGroup(role: "GO")] {
                var watch = WiFiSetupWatch(goal: goal, radioPath: paths[0])
                for _ in 0..<4 {
                    let s = WPASignal(path: paths.randomElement(using: &rng) ?? "", interface: apis.randomElement(using: &rng) ?? "",
                                      member: members.randomElement(using: &rng) ?? "", args: [value(), v, value()].prefix(Int.random(in: 0...3, using: &rng)).map { $0 })
                    if case let .failed(f)? = watch.handle(s) { XCTAssertFalse(f.description.isEmpty) }
                }
            }
        }
        labLogIfVerbose("random wpa_supplicant values accepted by a reader: \(accepted) of 15000")
    }

    /// Credentials JSON whose structure decodes but whose values are drawn from valid and
    /// invalid ones alike (lengths, control characters, non-ASCII, frequencies off any channel).
    func wellFormedCredentials() -> [UInt8] {
        func pick(_ options: [String]) -> String { options.randomElement(using: &rng) ?? "" }
        let ssid = pick(["", "DIRECT-2e", String(repeating: "s", count: 33), "DIRECT-\\u0007x", "DIRECT-é", "x"])
        let pass = pick(["cHoaVX12", "short", String(repeating: "p", count: 64), "tab\\there12", "ünïcodé-pass"])
        let freq = pick(["2412", "5180", "0", "-5", "2413", "99999", "5955"])
        let kind = pick(["p2p", "softap"])
        let json = #"{"bssid":"46:00:00:00:00:00","frequency":\#(freq),"kind":"\#(kind)","passphrase":"\#(pass)","ssid":"\#(ssid)"}"#
        return Array(json.utf8)
    }

    /// Credentials arrive from the peer (inside the session) as JSON: mutated JSON never
    /// crashes, and what decodes is either valid or refused by `validate` with a reason.
    func testReceivedCredentialsAreDecodedAndValidatedSafely() throws {
        // Sorted keys: the encoder's key order is otherwise per process, and the mutations
        // (so what this test exercises) would change from run to run.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let good = try encoder.encode(WiFiCredentials(kind: .p2pGroup, ssid: "DIRECT-2e", passphrase: "cHoaVX12", frequency: 2412,
                                                      bssid: MACAddress("46:00:00:00:00:00")!, ownerDeviceAddress: MACAddress("42:00:00:00:00:00")))
        var decoded = 0, refused = 0
        for round in 0..<3000 {
            let input: [UInt8]
            switch round % 3 {
            case 0: input = bytes(120)
            case 1: input = wellFormedCredentials()
            default: input = mutate(Array(good))
            }
            guard let c = try? JSONDecoder().decode(WiFiCredentials.self, from: Data(input)) else { continue }
            decoded += 1
            do {
                try c.validate()
                XCTAssertTrue((1...32).contains(c.ssid.utf8.count) && (8...63).contains(c.passphrase.utf8.count))
                XCTAssertTrue(WiFiChannels.isValidFrequency(c.frequency))
            } catch let WiFiError.invalidCredentials(why) {
                refused += 1
                XCTAssertFalse(why.isEmpty)
            }
        }
        labLogIfVerbose("credentials: \(decoded) of 3000 decoded, \(refused) refused")
        XCTAssertGreaterThan(decoded, 0, "some mutations still decode, so validate is exercised")
        XCTAssertGreaterThan(refused, 0, "and some of those are refused")
        for _ in 0..<2000 { _ = MACAddress(String(decoding: bytes(20), as: UTF8.self)) }
    }
}

func labLogIfVerbose(_ s: String) {
    if ProcessInfo.processInfo.environment["PEERLINK_TEST_VERBOSE"] != nil { print(s) }
}
