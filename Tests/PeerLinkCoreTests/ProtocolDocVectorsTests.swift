import Crypto
import Foundation
import XCTest
import DocVectors

import PeerLinkCore
import PeerLinkWire

/// Keeps the identity and Noise vectors of docs/PROTOCOL.md (blocks named `identity-*` and
/// `noise-*`) in step with the implementation: the peer-ID derivation and a complete
/// Noise_XX handshake with fixed keys, carrying real hellos, then one transport message each
/// way. Both directions are checked: writing gives the documented bytes, reading the
/// documented bytes gives the documented payloads and keys.
final class ProtocolDocVectorsTests: XCTestCase {
    static let ownedPrefixes = ["identity-", "noise-", "bt-"]
    static let checkedHere: Set<String> = [
        "identity-private-key", "identity-public-key", "identity-public-key-sha256", "identity-peer-id-bytes", "identity-peer-id",
        "noise-prologue",
        "noise-initiator-static-private", "noise-initiator-static-public",
        "noise-initiator-ephemeral-private", "noise-initiator-ephemeral-public",
        "noise-responder-static-private", "noise-responder-static-public", "noise-responder-peer-id",
        "noise-responder-ephemeral-private", "noise-responder-ephemeral-public",
        "noise-message-1", "noise-message-2", "noise-message-3", "noise-handshake-hash",
        "noise-transport-1", "noise-transport-2",
        "bt-uuid-input", "bt-uuid-field-demo", "bt-uuid-peerlink", "bt-advert", "bt-advertising-data",
    ]

    static let invite = Frame.invite(id: 0x1234_5678, timeoutMillis: 30000, context: Array("lab".utf8))
    static let inviteReply = Frame.inviteReply(id: 0x1234_5678, answer: .accepted)

    var doc: DocVectors!

    override func setUpWithError() throws {
        doc = try DocVectors.load()
    }

    func testEveryIdentityAndNoiseVectorIsChecked() {
        let inDoc = Set(doc.names.filter { name in Self.ownedPrefixes.contains { name.hasPrefix($0) } })
        XCTAssertEqual(inDoc.subtracting(Self.checkedHere), [], "vectors in docs/PROTOCOL.md that no test checks")
        XCTAssertEqual(Self.checkedHere.subtracting(inDoc), [], "vectors this test expects but docs/PROTOCOL.md lacks")
        XCTAssertEqual(doc.duplicates, [], "vector names used more than once")
    }

    func testPeerIDDerivation() throws {
        let identity = try Identity(privateKeyBytes: try doc.hex("identity-private-key"))
        XCTAssertEqual(identity.publicKey, try doc.hex("identity-public-key"))
        let digest = Array(SHA256.hash(data: identity.publicKey))
        XCTAssertEqual(digest, try doc.hex("identity-public-key-sha256"))
        XCTAssertEqual(Array(digest.prefix(20)), try doc.hex("identity-peer-id-bytes"))
        XCTAssertEqual(identity.peerID.bytes, try doc.hex("identity-peer-id-bytes"))
        XCTAssertEqual(identity.peerID.description, try doc.text("identity-peer-id"))
        XCTAssertEqual(PeerID(publicKey: identity.publicKey), try PeerID(parsing: try doc.text("identity-peer-id")))
    }

    func testPrologue() throws {
        XCTAssertEqual(try doc.hex("noise-prologue"), PeerLinkProtocol.prologue)
        XCTAssertEqual(PeerLinkProtocol.prologue, Array("peerlink/1".utf8))
    }

    func testHandshakeTranscript() throws {
        func key(_ name: String) throws -> Curve25519.KeyAgreement.PrivateKey {
            let k = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: try doc.hex("noise-\(name)-private"))
            XCTAssertEqual(Array(k.publicKey.rawRepresentation), try doc.hex("noise-\(name)-public"), name)
            return k
        }
        let initiatorStatic = try key("initiator-static"), initiatorEphemeral = try key("initiator-ephemeral")
        let responderStatic = try key("responder-static"), responderEphemeral = try key("responder-ephemeral")
        XCTAssertEqual(initiatorStatic.rawRepresentation, Data(try doc.hex("identity-private-key")),
                       "the dialler of the transcript is the identity of the peer-ID example")

        // The hellos are the wire vectors of section 6 (their encoding is checked in PeerLinkWireTests).
        let initiatorHelloBytes = try doc.hex("hello"), responderHelloBytes = try doc.hex("hello-responder")
        let initiatorHello = try Hello.decode(initiatorHelloBytes), responderHello = try Hello.decode(responderHelloBytes)
        XCTAssertEqual(initiatorHello.displayName, "alice-laptop")
        XCTAssertEqual(responderHello.displayName, "bob-pi")

        let m1 = try doc.hex("noise-message-1"), m2 = try doc.hex("noise-message-2"), m3 = try doc.hex("noise-message-3")
        var initiator = NoiseHandshakeXX(role: .initiator, staticKey: initiatorStatic, prologue: PeerLinkProtocol.prologue,
                                         ephemeralKey: initiatorEphemeral)
        var responder = NoiseHandshakeXX(role: .responder, staticKey: responderStatic, prologue: PeerLinkProtocol.prologue,
                                         ephemeralKey: responderEphemeral)

        // Message 1: e, empty payload.
        XCTAssertEqual(try initiator.writeMessage(payload: []), m1)
        XCTAssertEqual(m1.count, 32)
        XCTAssertEqual(try responder.readMessage(m1), [])

        // Message 2: e, ee, s, es + the listener's hello.
        XCTAssertEqual(try responder.writeMessage(payload: responderHelloBytes), m2)
        XCTAssertEqual(m2.count, 32 + 48 + responderHelloBytes.count + 16)
        let payload2 = try initiator.readMessage(m2)
        XCTAssertEqual(payload2, responderHelloBytes)
        XCTAssertEqual(try Hello.decode(payload2), responderHello)
        let responderKey = try XCTUnwrap(initiator.remoteStaticKey)
        XCTAssertEqual(responderKey, try doc.hex("noise-responder-static-public"))
        XCTAssertEqual(PeerID(publicKey: responderKey).description, try doc.text("noise-responder-peer-id"))

        // Message 3: s, se + the dialler's hello.
        XCTAssertEqual(try initiator.writeMessage(payload: initiatorHelloBytes), m3)
        XCTAssertEqual(m3.count, 48 + initiatorHelloBytes.count + 16)
        let payload3 = try responder.readMessage(m3)
        XCTAssertEqual(try Hello.decode(payload3), initiatorHello)
        let initiatorKey = try XCTUnwrap(responder.remoteStaticKey)
        XCTAssertEqual(initiatorKey, try doc.hex("noise-initiator-static-public"))
        XCTAssertEqual(PeerID(publicKey: initiatorKey).description, try doc.text("identity-peer-id"))

        XCTAssertTrue(initiator.isComplete && responder.isComplete)
        XCTAssertEqual(initiator.handshakeHash, try doc.hex("noise-handshake-hash"))
        XCTAssertEqual(responder.handshakeHash, try doc.hex("noise-handshake-hash"))

        // One transport message each way, nonce 0: the INVITE and its reply.
        var (initiatorSend, initiatorReceive) = try initiator.split()
        var (responderSend, responderReceive) = try responder.split()
        XCTAssertEqual(Self.invite.encode(), try doc.hex("frame-invite"))
        XCTAssertEqual(Self.inviteReply.encode(), try doc.hex("frame-invite-reply"))
        let t1 = try doc.hex("noise-transport-1"), t2 = try doc.hex("noise-transport-2")
        XCTAssertEqual(try initiatorSend.encrypt(Self.invite.encode()), t1)
        XCTAssertEqual(try Frame.decode(try responderReceive.decrypt(t1)), Self.invite)
        XCTAssertEqual(try responderSend.encrypt(Self.inviteReply.encode()), t2)
        XCTAssertEqual(try Frame.decode(try initiatorReceive.decrypt(t2)), Self.inviteReply)
    }

    /// §14.1 and §14.2: the service UUID derivation and the LE advertisement layout.
    func testBluetoothUUIDAndAdvertVectors() throws {
        let demo = try ServiceType("field-demo")
        let input = try doc.hex("bt-uuid-input")
        XCTAssertEqual(input, BluetoothServiceUUID.namespace + Array("peerlink/1/field-demo".utf8))
        var expected = Array(SHA256.hash(data: input).prefix(16))
        expected[6] = expected[6] & 0x0f | 0x80
        expected[8] = expected[8] & 0x3f | 0x80
        XCTAssertEqual(BluetoothServiceUUID.bytes(for: demo), expected)
        XCTAssertEqual(BluetoothServiceUUID.string(for: demo), try doc.text("bt-uuid-field-demo"))
        XCTAssertEqual(BluetoothServiceUUID.string(for: try ServiceType("peerlink")), try doc.text("bt-uuid-peerlink"))

        let peer = try PeerID(bytes: try doc.hex("identity-peer-id-bytes"))
        let advert = try BluetoothAdvert(peerID: peer, rfcommChannel: 3, l2capPSM: 0x1001)
        let advertBytes = try doc.hex("bt-advert")
        XCTAssertEqual(advert.encode(), advertBytes)
        XCTAssertEqual(try BluetoothAdvert.decode(advertBytes), advert)
        XCTAssertTrue(advert.matches(peer))

        // Flags, then Service Data 128 (type 0x21) with the UUID little-endian: 31 bytes.
        let ad: [UInt8] = [0x02, 0x01, 0x06, 0x1b, 0x21] + BluetoothServiceUUID.bytes(for: demo).reversed() + advertBytes
        XCTAssertEqual(ad.count, 31)
        XCTAssertEqual(try doc.hex("bt-advertising-data"), ad)
    }
}
