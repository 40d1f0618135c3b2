import Crypto
import XCTest

@testable import PeerLinkCore

/// Known-answer tests for `Noise_XX_25519_ChaChaPoly_SHA256` against published vectors.
///
/// Vector data (only the data) is copied from:
/// - cacophony: github.com/haskell-cryptography/cacophony, `vectors/cacophony.txt`
///   (commit 8ee9d41e34a1a596cfa3ab12aa4069ff87dc1247), entry `Noise_XX_25519_ChaChaPoly_SHA256`.
/// - snow: github.com/mcginty/snow, `tests/vectors/snow.txt`
///   (commit 8ac60f51cfe3e010c84f0a454cc575ad9204fa12), entry `Noise_XX_25519_ChaChaPoly_SHA256`.
///
/// Convention of both files: messages alternate initiator, responder, initiator, ... The first
/// three are the handshake; the rest are transport messages, continuing the alternation.
final class NoiseVectorTests: XCTestCase {
    struct Vector {
        var prologue: String
        var initStatic: String
        var initEphemeral: String
        var respStatic: String
        var respEphemeral: String
        var handshakeHash: String?
        var messages: [(payload: String, ciphertext: String)]
    }

    static let cacophony = Vector(
        prologue: "4a6f686e2047616c74",
        initStatic: "e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1",
        initEphemeral: "893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a",
        respStatic: "4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893",
        respEphemeral: "bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b",
        handshakeHash: "c8e5f64e846193be2a834104c2a009868d6c9f3bd3c186299888b488b2f1f58e",
        messages: [
            (
                "4c756477696720766f6e204d69736573",
                "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c79444c756477696720766f6e204d69736573"
            ),
            (
                "4d757272617920526f746862617264",
                "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f14480884381cbad1f276e038c48378ffce2b65285"
                    + "e08d6b68aaa3629a5a8639392490e5b9bd5269c2f1e4f488ed8831161f19b7815528f8982ffe09be9b5c412f8a0d"
                    + "b50f8814c7194e83f23dbd8d162c9326ad"
            ),
            (
                "462e20412e20486179656b",
                "c7195ffacac1307ff99046f219750fc47693e23c3cb08b89c2af808b444850a80ae475b9df0f169ae80a89be0865b57f"
                    + "58c9fea0d4ec82a286427402f113e4b6ae769a1d95941d49b25030"
            ),
            ("4361726c204d656e676572", "96763ed773f8e47bb3712f0e29b3060ffc956ffc146cee53d5e1df"),
            (
                "4a65616e2d426170746973746520536179",
                "3e40f15f6f3a46ae446b253bf8b1d9ffb6ed9b174d272328ff91a7e2e5c79c07f5"
            ),
            (
                "457567656e2042f6686d20766f6e2042617765726b",
                "eb3f3515110702e047a6c9da4478b6ead94873c11c0f2d710ddb3f09fce024b3a58502ae3f"
            ),
        ]
    )

    static let snow = Vector(
        prologue: "5468657265206973206e6f20726967687420616e642077726f6e672e2054686572652773206f6e6c792066756e20616e6420626f72696e672e",
        initStatic: "7dec208517a3b81a2861d7a71266d5d6dc944c5a8816634a86fe63198a0148ee",
        initEphemeral: "a32daf21e93c0131495ce1d903181fde81cc46937daaeb990bae7c992709421e",
        respStatic: "4d0aed5098e3b4ef20357e9f686ce66204c792b358da2e475017d6c485304881",
        respEphemeral: "4eece0f195d026db035ff987597c429d3ad3bcc2944df37d649528951b2a27c5",
        handshakeHash: nil,
        messages: [
            (
                "d03c489139e645d0711a3c9e810d776b46a84912463fafa87b884eebf242dc34",
                "f9fa868ba97ab8a2686deccfaad5a484ee10a5bb85e3d1dce015a84797f92818"
                    + "d03c489139e645d0711a3c9e810d776b46a84912463fafa87b884eebf242dc34"
            ),
            (
                "d8190a92f7dc0c93dbea9118ba8055751fb7c6590c416ffbd419964132b99a85",
                "8c4e6fdb7d09d501a86f7eca5c234522751706ed409182c05cdf5f827d4dae47b81c6c5f43b025692c24391eefee725c"
                    + "17d8cb0fbe3e4abb8aedf42c4fd2592d4ea48ac08989d6ae8b4adae08b2c34087c808c7aa55a63c02b0fab9e930612"
                    + "336bd43eaea04d3c670a0a146691aa9cc9d357872320dc735dbc48580cffb553db"
            ),
            (
                "77891b19dcb92ef7c055b672c4a5aa7fdf1c84146b8b303459022729473ce254",
                "933ca6b5ed60df3df66121f0ab49a09e49efa45c613a86a3cecbf4c535cef2f83f72b42837b18e3572f2fdc2b74c331e"
                    + "2368a545cef54bdca081678ab0e9dd5348122459e0c034c851984d88ce610963d43cde6cfe73a67fbd5a63e8bfca96d0"
            ),
            (
                "d7efdf988072881941db045a42882433817555128fbf5663e56081712ec7d212",
                "54ef0ff0629e1aaa7685a2806ab111cba76b52331f2642276736f415868eacb69ab2577f3bda0cbf72f879685f6ed25f"
            ),
            (
                "dd7bf01a588bafb52c6cfba952e5d8fe35cc2b3f92b4730ae2474615157345ce",
                "356be70f110306d5c699bb834bb9d58d909e325924dfbec972e406e6f294dc63e1daebefe8a62a334facc8048ab4ad66"
            ),
        ]
    )

    func testCacophonyVector() throws {
        try run(Self.cacophony)
    }

    func testSnowVector() throws {
        try run(Self.snow)
    }

    func testProtocolNameFillsHashLengthExactly() {
        // The name is exactly HASHLEN bytes, so h is the name itself, unpadded and unhashed.
        let state = NoiseSymmetricState(protocolName: Noise.protocolName)
        XCTAssertEqual(state.handshakeHash, Array(Noise.protocolName.utf8))
        XCTAssertEqual(state.chainingKey, state.handshakeHash)
    }

    func testShortAndLongProtocolNames() {
        let short = NoiseSymmetricState(protocolName: "Noise_NN")
        XCTAssertEqual(short.handshakeHash, Array("Noise_NN".utf8) + [UInt8](repeating: 0, count: 24))
        let longName = "Noise_XXpsk3_25519_ChaChaPoly_BLAKE2s"
        let long = NoiseSymmetricState(protocolName: longName)
        XCTAssertEqual(long.handshakeHash, Array(SHA256.hash(data: Array(longName.utf8))))
    }

    func testNonceEncodingIsLittleEndianAfterFourZeroBytes() {
        XCTAssertEqual(
            NoiseCipherState.nonceBytes(0x0102_0304_0506_0708),
            [0, 0, 0, 0, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01]
        )
    }

    // MARK: - Helpers

    private func run(_ vector: Vector, file: StaticString = #filePath, line: UInt = #line) throws {
        let initStatic = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: NoiseHex.decode(vector.initStatic))
        let respStatic = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: NoiseHex.decode(vector.respStatic))
        var initiator = NoiseHandshakeXX(
            role: .initiator,
            staticKey: initStatic,
            prologue: NoiseHex.decode(vector.prologue),
            ephemeralKey: try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: NoiseHex.decode(vector.initEphemeral))
        )
        var responder = NoiseHandshakeXX(
            role: .responder,
            staticKey: respStatic,
            prologue: NoiseHex.decode(vector.prologue),
            ephemeralKey: try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: NoiseHex.decode(vector.respEphemeral))
        )

        for (index, message) in vector.messages.prefix(3).enumerated() {
            let initiatorSends = index % 2 == 0
            XCTAssertEqual(initiator.isMyTurnToWrite, initiatorSends, "turn before message \(index)", file: file, line: line)
            XCTAssertEqual(responder.isMyTurnToWrite, !initiatorSends, "turn before message \(index)", file: file, line: line)
            let payload = NoiseHex.decode(message.payload)
            let written: [UInt8]
            let read: [UInt8]
            if initiatorSends {
                written = try initiator.writeMessage(payload: payload)
                read = try responder.readMessage(written)
            } else {
                written = try responder.writeMessage(payload: payload)
                read = try initiator.readMessage(written)
            }
            XCTAssertEqual(NoiseHex.encode(written), message.ciphertext, "handshake message \(index)", file: file, line: line)
            XCTAssertEqual(read, payload, "handshake payload \(index)", file: file, line: line)
        }

        XCTAssertTrue(initiator.isComplete, file: file, line: line)
        XCTAssertTrue(responder.isComplete, file: file, line: line)
        XCTAssertEqual(initiator.handshakeHash, responder.handshakeHash, file: file, line: line)
        if let expectedHash = vector.handshakeHash {
            XCTAssertEqual(NoiseHex.encode(initiator.handshakeHash), expectedHash, "handshake hash", file: file, line: line)
        }
        XCTAssertEqual(initiator.remoteStaticKey, Array(respStatic.publicKey.rawRepresentation), file: file, line: line)
        XCTAssertEqual(responder.remoteStaticKey, Array(initStatic.publicKey.rawRepresentation), file: file, line: line)

        var (initSend, initReceive) = try initiator.split()
        var (respSend, respReceive) = try responder.split()
        for (index, message) in vector.messages.enumerated().dropFirst(3) {
            let payload = NoiseHex.decode(message.payload)
            let written: [UInt8]
            let read: [UInt8]
            if index % 2 == 0 {
                written = try initSend.encrypt(payload)
                read = try respReceive.decrypt(written)
            } else {
                written = try respSend.encrypt(payload)
                read = try initReceive.decrypt(written)
            }
            XCTAssertEqual(NoiseHex.encode(written), message.ciphertext, "transport message \(index)", file: file, line: line)
            XCTAssertEqual(read, payload, "transport payload \(index)", file: file, line: line)
        }
    }
}

/// Hex helpers for the Noise tests (test literals only; they are well-formed).
enum NoiseHex {
    static func decode(_ string: String) -> [UInt8] {
        let chars = Array(string.utf8)
        precondition(chars.count % 2 == 0, "odd-length hex literal")
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: preconditionFailure("bad hex digit in test literal")
            }
        }
        return stride(from: 0, to: chars.count, by: 2).map { nibble(chars[$0]) << 4 | nibble(chars[$0 + 1]) }
    }

    static func encode(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]])
        }.joined()
    }
}
