import Crypto
import TestKit
import XCTest

@testable import PeerLinkCore

/// Behaviour tests for the Noise XX handshake and cipher states (random keys).
final class NoiseHandshakeTests: XCTestCase {
    private let prologue = Array("peerlink/1".utf8)

    /// This test's random inputs (printed seed; PEERLINK_TEST_SEED repeats them).
    private lazy var rng = seededGenerator(self)

    private func randomBytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &rng) }
    }

    private func makePair(
        initiatorPrologue: [UInt8]? = nil,
        responderPrologue: [UInt8]? = nil
    ) -> (NoiseHandshakeXX, NoiseHandshakeXX, Curve25519.KeyAgreement.PrivateKey, Curve25519.KeyAgreement.PrivateKey) {
        let initiatorKey = Curve25519.KeyAgreement.PrivateKey()
        let responderKey = Curve25519.KeyAgreement.PrivateKey()
        let initiator = NoiseHandshakeXX(role: .initiator, staticKey: initiatorKey, prologue: initiatorPrologue ?? prologue)
        let responder = NoiseHandshakeXX(role: .responder, staticKey: responderKey, prologue: responderPrologue ?? prologue)
        return (initiator, responder, initiatorKey, responderKey)
    }

    /// Runs the whole handshake and returns both sides' transport states.
    private func completeHandshake() throws -> (
        initiator: (send: NoiseCipherState, receive: NoiseCipherState),
        responder: (send: NoiseCipherState, receive: NoiseCipherState)
    ) {
        var (initiator, responder, _, _) = makePair()
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        _ = try initiator.readMessage(try responder.writeMessage(payload: [1]))
        _ = try responder.readMessage(try initiator.writeMessage(payload: [2]))
        return (try initiator.split(), try responder.split())
    }

    private func assertNoiseError(
        _ expected: NoiseError,
        file: StaticString = #filePath,
        line: UInt = #line,
        _ body: () throws -> Void
    ) {
        do {
            try body()
            XCTFail("expected \(expected), nothing was thrown", file: file, line: line)
        } catch let error as NoiseError {
            if case .wrongState = expected, case .wrongState = error { return }
            XCTAssertEqual(error, expected, file: file, line: line)
        } catch {
            XCTFail("expected \(expected), got \(error)", file: file, line: line)
        }
    }

    // MARK: - Happy path

    func testFullHandshakeRoundTripWithRandomKeysAndPayloads() throws {
        var (initiator, responder, initiatorKey, responderKey) = makePair()
        XCTAssertTrue(initiator.isMyTurnToWrite)
        XCTAssertFalse(responder.isMyTurnToWrite)
        XCTAssertNil(initiator.remoteStaticKey)
        XCTAssertNil(responder.remoteStaticKey)

        let payload1: [UInt8] = []
        let payload2 = randomBytes(200)
        let payload3 = randomBytes(1000)

        let message1 = try initiator.writeMessage(payload: payload1)
        XCTAssertEqual(message1.count, 32)
        XCTAssertEqual(try responder.readMessage(message1), payload1)
        XCTAssertNil(responder.remoteStaticKey)

        let message2 = try responder.writeMessage(payload: payload2)
        XCTAssertEqual(message2.count, 32 + 48 + payload2.count + 16)
        XCTAssertEqual(try initiator.readMessage(message2), payload2)
        XCTAssertEqual(initiator.remoteStaticKey, Array(responderKey.publicKey.rawRepresentation))
        XCTAssertFalse(initiator.isComplete)

        let message3 = try initiator.writeMessage(payload: payload3)
        XCTAssertEqual(message3.count, 48 + payload3.count + 16)
        XCTAssertTrue(initiator.isComplete)
        XCTAssertEqual(try responder.readMessage(message3), payload3)
        XCTAssertTrue(responder.isComplete)
        XCTAssertEqual(responder.remoteStaticKey, Array(initiatorKey.publicKey.rawRepresentation))
        XCTAssertEqual(initiator.localStaticKey, Array(initiatorKey.publicKey.rawRepresentation))

        XCTAssertFalse(initiator.isMyTurnToWrite)
        XCTAssertFalse(responder.isMyTurnToWrite)
        XCTAssertEqual(initiator.handshakeHash, responder.handshakeHash)
        XCTAssertEqual(initiator.handshakeHash.count, 32)

        var (initiatorSend, initiatorReceive) = try initiator.split()
        var (responderSend, responderReceive) = try responder.split()
        for round in 0..<10 {
            let toResponder = randomBytes(round * 37)
            XCTAssertEqual(try responderReceive.decrypt(try initiatorSend.encrypt(toResponder)), toResponder)
            let toInitiator = randomBytes(round * 53 + 1)
            XCTAssertEqual(try initiatorReceive.decrypt(try responderSend.encrypt(toInitiator)), toInitiator)
        }
        XCTAssertEqual(initiatorSend.nonce, 10)
        XCTAssertEqual(responderReceive.nonce, 10)
        XCTAssertEqual(responderSend.nonce, 10)
        XCTAssertEqual(initiatorReceive.nonce, 10)
    }

    func testTwoHandshakesWithTheSameKeysHaveDifferentHashes() throws {
        let a = Curve25519.KeyAgreement.PrivateKey()
        let b = Curve25519.KeyAgreement.PrivateKey()
        var hashes: [[UInt8]] = []
        for _ in 0..<2 {
            var initiator = NoiseHandshakeXX(role: .initiator, staticKey: a, prologue: prologue)
            var responder = NoiseHandshakeXX(role: .responder, staticKey: b, prologue: prologue)
            _ = try responder.readMessage(try initiator.writeMessage(payload: []))
            _ = try initiator.readMessage(try responder.writeMessage(payload: []))
            _ = try responder.readMessage(try initiator.writeMessage(payload: []))
            hashes.append(initiator.handshakeHash)
        }
        XCTAssertNotEqual(hashes[0], hashes[1], "fresh ephemeral keys must give a fresh session")
    }

    func testMismatchedPrologueFailsAuthentication() throws {
        var (initiator, responder, _, _) = makePair(responderPrologue: Array("peerlink/2".utf8))
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        let message2 = try responder.writeMessage(payload: [])
        assertNoiseError(.decryptFailed) { _ = try initiator.readMessage(message2) }
    }

    // MARK: - Tampering

    func testTamperedHandshakeMessage2FailsAndLeavesStateUnchanged() throws {
        var (initiator, responder, _, _) = makePair()
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        let message2 = try responder.writeMessage(payload: Array("hello".utf8))
        for index in [40, message2.count - 1, 32 + 48 + 1] {  // encrypted s, tag, payload
            var tampered = message2
            tampered[index] ^= 0x01
            assertNoiseError(.decryptFailed) { _ = try initiator.readMessage(tampered) }
            XCTAssertNil(initiator.remoteStaticKey)
            XCTAssertFalse(initiator.isMyTurnToWrite)
        }
        // The untouched message still works: a failed read does not change the state.
        XCTAssertEqual(try initiator.readMessage(message2), Array("hello".utf8))
    }

    func testTamperedHandshakeMessage3Fails() throws {
        var (initiator, responder, _, _) = makePair()
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        _ = try initiator.readMessage(try responder.writeMessage(payload: []))
        var message3 = try initiator.writeMessage(payload: [9, 9, 9])
        message3[0] ^= 0x80
        assertNoiseError(.decryptFailed) { _ = try responder.readMessage(message3) }
        XCTAssertFalse(responder.isComplete)
        XCTAssertNil(responder.remoteStaticKey)
    }

    func testTamperedEphemeralInMessage1IsDetectedLater() throws {
        var (initiator, responder, _, _) = makePair()
        var message1 = try initiator.writeMessage(payload: [])
        message1[5] ^= 0x01
        _ = try responder.readMessage(message1)  // message 1 is unauthenticated
        let message2 = try responder.writeMessage(payload: [])
        assertNoiseError(.decryptFailed) { _ = try initiator.readMessage(message2) }
    }

    func testTamperedTransportMessageFails() throws {
        var (initiator, responder) = try completeHandshake()
        let plaintext = Array("transport".utf8)
        let ciphertext = try initiator.send.encrypt(plaintext, ad: [1, 2, 3])
        for index in [0, ciphertext.count - 1] {
            var tampered = ciphertext
            tampered[index] ^= 0x20
            assertNoiseError(.decryptFailed) { _ = try responder.receive.decrypt(tampered, ad: [1, 2, 3]) }
        }
        assertNoiseError(.decryptFailed) { _ = try responder.receive.decrypt(ciphertext, ad: [1, 2, 4]) }
        // The same-direction key is not the other direction's key.
        var responderSendCopy = responder.send
        assertNoiseError(.decryptFailed) { _ = try responderSendCopy.decrypt(ciphertext, ad: [1, 2, 3]) }
        // Failures do not advance the nonce, so the real message still decrypts.
        XCTAssertEqual(responder.receive.nonce, 0)
        XCTAssertEqual(try responder.receive.decrypt(ciphertext, ad: [1, 2, 3]), plaintext)
        XCTAssertEqual(responder.receive.nonce, 1)
        // A replay is rejected because the nonce has moved on.
        assertNoiseError(.decryptFailed) { _ = try responder.receive.decrypt(ciphertext, ad: [1, 2, 3]) }
    }

    // MARK: - Truncation and size limits

    func testTruncatedHandshakeMessagesAreRejected() throws {
        var (initiator, responder, _, _) = makePair()
        let message1 = try initiator.writeMessage(payload: [])
        assertNoiseError(.messageTooShort) { _ = try responder.readMessage([]) }
        assertNoiseError(.messageTooShort) { _ = try responder.readMessage(Array(message1.prefix(31))) }
        _ = try responder.readMessage(message1)

        let message2 = try responder.writeMessage(payload: [1, 2, 3, 4])
        assertNoiseError(.messageTooShort) { _ = try initiator.readMessage(Array(message2.prefix(95))) }
        assertNoiseError(.messageTooShort) { _ = try initiator.readMessage(Array(message2.prefix(40))) }
        // Long enough for the minimum layout but missing payload bytes: the tag does not verify.
        assertNoiseError(.decryptFailed) { _ = try initiator.readMessage(Array(message2.prefix(98))) }
        _ = try initiator.readMessage(message2)

        let message3 = try initiator.writeMessage(payload: [])
        assertNoiseError(.messageTooShort) { _ = try responder.readMessage(Array(message3.prefix(63))) }
        assertNoiseError(.messageTooShort) { _ = try responder.readMessage([]) }
        _ = try responder.readMessage(message3)
        XCTAssertTrue(responder.isComplete)
    }

    func testTruncatedTransportMessageIsRejected() throws {
        var (initiator, responder) = try completeHandshake()
        let ciphertext = try initiator.send.encrypt([1, 2, 3])
        assertNoiseError(.messageTooShort) { _ = try responder.receive.decrypt([]) }
        assertNoiseError(.messageTooShort) { _ = try responder.receive.decrypt(Array(ciphertext.prefix(15))) }
        assertNoiseError(.decryptFailed) { _ = try responder.receive.decrypt(Array(ciphertext.prefix(16))) }
        assertNoiseError(.messageTooShort) { _ = try responder.receive.decrypt([0, 1], nonce: 0) }
        // An empty plaintext gives a 16-byte message, which is valid.
        let empty = try initiator.send.encrypt([])
        XCTAssertEqual(empty.count, 16)
    }

    func testTransportMessagesLongerThan65535BytesAreRejected() throws {
        var (initiator, responder) = try completeHandshake()
        let largest = randomBytes(Noise.maxMessageLength - 16)
        let ciphertext = try initiator.send.encrypt(largest)
        XCTAssertEqual(ciphertext.count, Noise.maxMessageLength)
        XCTAssertEqual(try responder.receive.decrypt(ciphertext), largest)

        let nonceBefore = initiator.send.nonce
        assertNoiseError(.messageTooLong) { _ = try initiator.send.encrypt(largest + [0]) }
        XCTAssertEqual(initiator.send.nonce, nonceBefore)
        assertNoiseError(.messageTooLong) { _ = try initiator.send.encrypt(largest + [0], nonce: 7) }
        assertNoiseError(.messageTooLong) { _ = try responder.receive.decrypt(ciphertext + [0]) }
        assertNoiseError(.messageTooLong) {
            _ = try responder.receive.decrypt([UInt8](repeating: 0, count: 100_000), nonce: 1)
        }
    }

    func testHandshakeMessagesLongerThan65535BytesAreRejected() throws {
        var (initiator, responder, _, _) = makePair()
        // Message 1 carries the payload in the clear after the 32-byte ephemeral key.
        assertNoiseError(.messageTooLong) { _ = try initiator.writeMessage(payload: [UInt8](repeating: 0, count: 65504)) }
        assertNoiseError(.messageTooLong) { _ = try initiator.writeMessage(payload: [UInt8](repeating: 0, count: Int(UInt16.max) * 4)) }
        XCTAssertTrue(initiator.isMyTurnToWrite, "a rejected write must not change the state")
        let message1 = try initiator.writeMessage(payload: [UInt8](repeating: 7, count: 65503))
        XCTAssertEqual(message1.count, Noise.maxMessageLength)
        assertNoiseError(.messageTooLong) { _ = try responder.readMessage(message1 + [0]) }
        XCTAssertEqual(try responder.readMessage(message1).count, 65503)

        // Message 2 has 96 bytes of overhead, message 3 has 64.
        assertNoiseError(.messageTooLong) { _ = try responder.writeMessage(payload: [UInt8](repeating: 0, count: 65440)) }
        let message2 = try responder.writeMessage(payload: [UInt8](repeating: 1, count: 65439))
        XCTAssertEqual(message2.count, Noise.maxMessageLength)
        assertNoiseError(.messageTooLong) { _ = try initiator.readMessage(message2 + [0]) }
        _ = try initiator.readMessage(message2)

        assertNoiseError(.messageTooLong) { _ = try initiator.writeMessage(payload: [UInt8](repeating: 0, count: 65472)) }
        let message3 = try initiator.writeMessage(payload: [UInt8](repeating: 2, count: 65471))
        XCTAssertEqual(message3.count, Noise.maxMessageLength)
        assertNoiseError(.messageTooLong) { _ = try responder.readMessage(message3 + [0]) }
        _ = try responder.readMessage(message3)
        XCTAssertTrue(responder.isComplete)
    }

    // MARK: - State machine

    func testWrongOrderCallsAreRejected() throws {
        var (initiator, responder, _, _) = makePair()
        assertNoiseError(.wrongState("")) { _ = try responder.writeMessage(payload: []) }
        assertNoiseError(.wrongState("")) { _ = try initiator.readMessage([UInt8](repeating: 9, count: 32)) }
        assertNoiseError(.wrongState("")) { _ = try initiator.split() }
        assertNoiseError(.wrongState("")) { _ = try responder.split() }

        let message1 = try initiator.writeMessage(payload: [])
        assertNoiseError(.wrongState("")) { _ = try initiator.writeMessage(payload: []) }
        _ = try responder.readMessage(message1)
        assertNoiseError(.wrongState("")) { _ = try responder.readMessage(message1) }

        let message2 = try responder.writeMessage(payload: [])
        assertNoiseError(.wrongState("")) { _ = try responder.writeMessage(payload: []) }
        _ = try initiator.readMessage(message2)
        assertNoiseError(.wrongState("")) { _ = try initiator.split() }

        let message3 = try initiator.writeMessage(payload: [])
        assertNoiseError(.wrongState("")) { _ = try responder.split() }
        _ = try responder.readMessage(message3)

        // Nothing more after completion.
        assertNoiseError(.wrongState("")) { _ = try initiator.writeMessage(payload: []) }
        assertNoiseError(.wrongState("")) { _ = try initiator.readMessage(message2) }
        assertNoiseError(.wrongState("")) { _ = try responder.writeMessage(payload: []) }
        assertNoiseError(.wrongState("")) { _ = try responder.readMessage(message3) }
        XCTAssertNoThrow(try initiator.split())
        XCTAssertNoThrow(try responder.split())
    }

    func testRandomGarbageNeverCrashes() throws {
        for _ in 0..<50 {
            var (initiator, responder, _, _) = makePair()
            // Message 1 is unauthenticated, so any 32+ bytes are accepted; shorter ones are not.
            let garbage1 = randomBytes(Int.random(in: 0...80, using: &rng))
            do {
                _ = try responder.readMessage(garbage1)
                XCTAssertGreaterThanOrEqual(garbage1.count, 32)
            } catch let error as NoiseError {
                XCTAssertEqual(error, .messageTooShort)
            }
            _ = try initiator.writeMessage(payload: [])
            let garbage2 = randomBytes(Int.random(in: 0...200, using: &rng))
            XCTAssertThrowsError(try initiator.readMessage(garbage2)) { XCTAssertTrue($0 is NoiseError) }
        }
    }

    // MARK: - Keys

    func testLowOrderRemoteEphemeralKeyIsRejected() throws {
        var (initiator, responder, _, _) = makePair()
        _ = try responder.readMessage([UInt8](repeating: 0, count: 32))  // all-zero ephemeral
        assertNoiseError(.invalidPublicKey) { _ = try responder.writeMessage(payload: []) }

        _ = try initiator.writeMessage(payload: [])
        let forged = [UInt8](repeating: 0, count: 32) + randomBytes(64)
        assertNoiseError(.invalidPublicKey) { _ = try initiator.readMessage(forged) }
    }

    func testDiffieHellmanRejectsLowOrderPoints() throws {
        let privateKey = Array(Curve25519.KeyAgreement.PrivateKey().rawRepresentation)
        let lowOrderPoints: [[UInt8]] = [
            [UInt8](repeating: 0, count: 32),  // 0
            [1] + [UInt8](repeating: 0, count: 31),  // 1
            NoiseHex.decode("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),  // order 8
            NoiseHex.decode("5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"),  // order 8
            NoiseHex.decode("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),  // p - 1
        ]
        for point in lowOrderPoints {
            assertNoiseError(.invalidPublicKey) { _ = try NoiseHandshakeXX.dh(privateKey: privateKey, publicKey: point) }
        }
        assertNoiseError(.invalidPublicKey) { _ = try NoiseHandshakeXX.dh(privateKey: privateKey, publicKey: []) }
        assertNoiseError(.invalidPublicKey) { _ = try NoiseHandshakeXX.dh(privateKey: privateKey, publicKey: [UInt8](repeating: 9, count: 31)) }
        let other = Curve25519.KeyAgreement.PrivateKey()
        XCTAssertEqual(
            try NoiseHandshakeXX.dh(privateKey: privateKey, publicKey: Array(other.publicKey.rawRepresentation)),
            try NoiseHandshakeXX.dh(
                privateKey: Array(other.rawRepresentation),
                publicKey: Array(try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: privateKey).publicKey.rawRepresentation)
            )
        )
    }

    // MARK: - Cipher state

    func testExplicitNonceEncryptDecrypt() throws {
        var (initiator, responder) = try completeHandshake()
        let messages = (0..<5).map { randomBytes($0 * 10 + 3) }
        let nonces: [UInt64] = [5, 0, 1_000_000, 3, UInt64.max - 1]
        let sealed = try zip(messages, nonces).map { try initiator.send.encrypt($0, nonce: $1, ad: [0xAA]) }
        XCTAssertEqual(initiator.send.nonce, 0, "explicit-nonce calls leave the counter alone")

        // Out of order, any number of times (replay windows are the caller's job).
        for index in [3, 0, 4, 2, 1, 0] {
            XCTAssertEqual(try responder.receive.decrypt(sealed[index], nonce: nonces[index], ad: [0xAA]), messages[index])
        }
        XCTAssertEqual(responder.receive.nonce, 0)
        assertNoiseError(.decryptFailed) { _ = try responder.receive.decrypt(sealed[0], nonce: 6, ad: [0xAA]) }
        assertNoiseError(.decryptFailed) { _ = try responder.receive.decrypt(sealed[0], nonce: 5, ad: []) }

        // The counter-based form is the explicit form at the current counter.
        let viaCounter = try initiator.send.encrypt(messages[1], ad: [0xAA])
        XCTAssertEqual(viaCounter, sealed[1])
        XCTAssertEqual(try responder.receive.decrypt(viaCounter, ad: [0xAA]), messages[1])

        // Nonce 2^64 - 1 is reserved.
        assertNoiseError(.nonceExhausted) { _ = try initiator.send.encrypt([1], nonce: UInt64.max) }
        assertNoiseError(.nonceExhausted) { _ = try responder.receive.decrypt(sealed[0], nonce: UInt64.max) }
    }

    func testCounterStopsBeforeReservedNonce() throws {
        let key = randomBytes(32)
        var sender = NoiseCipherState(key: key, nonce: UInt64.max - 1)
        var receiver = NoiseCipherState(key: key, nonce: UInt64.max - 1)
        let last = try sender.encrypt([42])
        XCTAssertEqual(try receiver.decrypt(last), [42])
        XCTAssertEqual(sender.nonce, UInt64.max)
        assertNoiseError(.nonceExhausted) { _ = try sender.encrypt([43]) }
        assertNoiseError(.nonceExhausted) { _ = try receiver.decrypt(last) }
        XCTAssertEqual(sender.nonce, UInt64.max)
    }

    func testEmptyCipherStatePassesThrough() throws {
        var empty = NoiseCipherState()
        XCTAssertFalse(empty.hasKey)
        XCTAssertEqual(try empty.encrypt([1, 2, 3], ad: [9]), [1, 2, 3])
        XCTAssertEqual(try empty.decrypt([4, 5], ad: [9]), [4, 5])
        XCTAssertEqual(empty.nonce, 0)
    }

    func testRekeyKeepsBothSidesInStep() throws {
        var (initiator, responder) = try completeHandshake()
        let before = try initiator.send.encrypt([1, 2, 3], nonce: 9)
        try initiator.send.rekey()
        try responder.receive.rekey()
        let after = try initiator.send.encrypt([1, 2, 3], nonce: 9)
        XCTAssertNotEqual(before, after)
        XCTAssertEqual(try responder.receive.decrypt(after, nonce: 9), [1, 2, 3])
        assertNoiseError(.decryptFailed) { _ = try responder.receive.decrypt(before, nonce: 9) }
        var empty = NoiseCipherState()
        assertNoiseError(.wrongState("")) { try empty.rekey() }
    }

    func testDescriptionsAreSentencesAndHideKeys() throws {
        let errors: [NoiseError] = [
            .decryptFailed, .messageTooShort, .messageTooLong, .wrongState("it is the other side's turn"),
            .invalidPublicKey, .invalidKey, .nonceExhausted,
        ]
        for error in errors {
            XCTAssertTrue(error.description.first?.isUppercase ?? false, error.description)
            XCTAssertTrue(error.description.hasSuffix("."), error.description)
        }
        let key = [UInt8](repeating: 0xAB, count: 32)
        let description = NoiseCipherState(key: key).description
        XCTAssertFalse(description.lowercased().contains("ab, 171"))
        XCTAssertFalse(description.contains("171"))
    }
}
