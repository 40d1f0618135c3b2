import XCTest
import PeerLinkWire
@testable import PeerLinkCore

final class IdentityTests: XCTestCase {
    /// RFC 7748 §6.1: Alice's X25519 private and public keys.
    let alicePrivate = hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    let alicePublic = hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")

    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var it = s.makeIterator()
        while let h = it.next(), let l = it.next() { out.append(UInt8(String([h, l]), radix: 16)!) }
        return out
    }
    func hex(_ s: String) -> [UInt8] { Self.hex(s) }

    func testPeerIDIsBase32OfTruncatedSHA256() throws {
        // SHA-256(alicePublic) = 300c9c9603b92a4b39ed3958bf9240114804db4fd373012c0ca47432d63425ae (computed
        // independently with Python's hashlib); its first 20 bytes in lowercase unpadded base32:
        let expected = "gagjzfqdxevewopnhfml7esacfeajw2p"
        let id = PeerID(publicKey: alicePublic)
        XCTAssertEqual(id.bytes, hex("300c9c9603b92a4b39ed3958bf9240114804db4f"))
        XCTAssertEqual(id.description, expected)
        XCTAssertEqual(id.description.count, 32)
        let identity = try Identity(privateKeyBytes: alicePrivate)
        XCTAssertEqual(identity.publicKey, alicePublic)
        XCTAssertEqual(identity.peerID, id)
    }

    func testSameKeySameID() throws {
        let i = Identity()
        XCTAssertEqual(i.peerID, i.peerID)
        XCTAssertEqual(PeerID(publicKey: i.publicKey), i.peerID)
        XCTAssertNotEqual(Identity().peerID, i.peerID)
        XCTAssertEqual(i.peerID.description.count, PeerID.textLength)
        XCTAssertEqual(try PeerID(parsing: i.peerID.description), i.peerID)
    }

    func testStoredBytesRoundTrip() throws {
        let i = Identity()
        XCTAssertEqual(i.privateKeyBytes.count, 32)
        let j = try Identity(privateKeyBytes: i.privateKeyBytes)
        XCTAssertEqual(j.privateKeyBytes, i.privateKeyBytes)
        XCTAssertEqual(j.publicKey, i.publicKey)
        XCTAssertEqual(j.peerID, i.peerID)
    }

    func testWrongKeyLengthRejected() {
        for n in [0, 31, 33, 64] {
            XCTAssertThrowsError(try Identity(privateKeyBytes: [UInt8](repeating: 1, count: n))) {
                XCTAssertTrue($0 is WireError, "\($0)")
            }
        }
    }
}
