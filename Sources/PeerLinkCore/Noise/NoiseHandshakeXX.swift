import Crypto
import Foundation

/// The `Noise_XX_25519_ChaChaPoly_SHA256` handshake (Noise spec revision 34):
///
///     -> e
///     <- e, ee, s, es
///     -> s, se
///
/// A sans-I/O state machine: the initiator writes messages 1 and 3 and reads message 2; the
/// responder does the reverse. After the third message ``isComplete`` is true, both sides know
/// ``remoteStaticKey`` and ``split()`` yields the transport cipher states.
///
/// `writeMessage` and `readMessage` are transactional: when they throw, the handshake is left
/// exactly as it was. A caller on a reliable link should still abandon the handshake on any
/// error, as the spec recommends; a datagram caller may choose to ignore a forged message.
package struct NoiseHandshakeXX: Sendable {
    /// Which side of the handshake this is.
    package enum Role: Sendable {
        /// Sends the first message (the dialler).
        case initiator
        /// Receives the first message (the listener).
        case responder
    }

    /// This side's role.
    package let role: Role
    private let staticPrivateKey: [UInt8]
    /// This side's 32-byte static public key.
    package let localStaticKey: [UInt8]
    /// A fixed ephemeral private key, used only to reproduce test vectors.
    private let fixedEphemeralKey: [UInt8]?

    private(set) var symmetric: NoiseSymmetricState
    private var ephemeralPrivateKey: [UInt8]?
    private var remoteEphemeralKey: [UInt8]?
    /// The remote side's 32-byte static public key, known once it has been received and
    /// authenticated (after message 2 for the initiator, message 3 for the responder).
    package private(set) var remoteStaticKey: [UInt8]?
    /// The number of handshake messages processed so far (0...3).
    package private(set) var messageIndex = 0

    /// Starts a handshake.
    /// - Parameters:
    ///   - role: initiator or responder.
    ///   - staticKey: the long-term identity key (the Noise `s`).
    ///   - prologue: data both sides must agree on; PeerLink uses the ASCII bytes `peerlink/1`.
    ///   - ephemeralKey: a fixed ephemeral key, for test vectors only. Leave nil in production:
    ///     a fresh key is then generated for the handshake.
    package init(
        role: Role,
        staticKey: Curve25519.KeyAgreement.PrivateKey,
        prologue: [UInt8],
        ephemeralKey: Curve25519.KeyAgreement.PrivateKey? = nil
    ) {
        self.role = role
        staticPrivateKey = Array(staticKey.rawRepresentation)
        localStaticKey = Array(staticKey.publicKey.rawRepresentation)
        fixedEphemeralKey = ephemeralKey.map { Array($0.rawRepresentation) }
        symmetric = NoiseSymmetricState(protocolName: Noise.protocolName)
        symmetric.mixHash(prologue)
        // XX has no pre-messages, so nothing else is mixed in here.
    }

    /// Whether all three handshake messages have been processed.
    package var isComplete: Bool { messageIndex >= 3 }

    /// The current handshake hash `h`. Once ``isComplete`` is true, it uniquely identifies
    /// this session and may be used for channel binding (for example, a verification code).
    package var handshakeHash: [UInt8] { symmetric.handshakeHash }

    /// Whether the next step for this side is ``writeMessage(payload:)`` (false once complete).
    package var isMyTurnToWrite: Bool {
        switch messageIndex {
        case 0, 2: return role == .initiator
        case 1: return role == .responder
        default: return false
        }
    }

    /// Writes the next handshake message, carrying `payload` (sent in the clear in message 1,
    /// encrypted in messages 2 and 3).
    /// - Returns: the message bytes, at most ``Noise/maxMessageLength`` long.
    /// - Throws: ``NoiseError/wrongState(_:)`` if it is not this side's turn to write, or
    ///   ``NoiseError/messageTooLong`` if the payload does not fit.
    package mutating func writeMessage(payload: [UInt8]) throws -> [UInt8] {
        guard !isComplete else { throw NoiseError.wrongState("the handshake is already complete") }
        guard isMyTurnToWrite else {
            throw NoiseError.wrongState("handshake message \(messageIndex + 1) must be read, not written, by the \(role)")
        }
        let overhead = Self.overhead(ofMessage: messageIndex)
        guard payload.count <= Noise.maxMessageLength - overhead else { throw NoiseError.messageTooLong }

        var next = self
        var message: [UInt8] = []
        message.reserveCapacity(overhead + payload.count)
        switch messageIndex {
        case 0:  // -> e
            message += next.writeEphemeral()
        case 1:  // <- e, ee, s, es
            message += next.writeEphemeral()
            try next.mixDH(local: next.ephemeral(), remote: next.remoteEphemeral())  // ee
            message += try next.symmetric.encryptAndHash(localStaticKey)  // s
            try next.mixDH(local: staticPrivateKey, remote: next.remoteEphemeral())  // es
        default:  // -> s, se
            message += try next.symmetric.encryptAndHash(localStaticKey)  // s
            try next.mixDH(local: staticPrivateKey, remote: next.remoteEphemeral())  // se
        }
        message += try next.symmetric.encryptAndHash(payload)
        next.messageIndex += 1
        self = next
        return message
    }

    /// Reads the next handshake message from the other side.
    /// - Returns: the decrypted payload.
    /// - Throws: ``NoiseError/wrongState(_:)`` if this side should write instead,
    ///   ``NoiseError/messageTooShort`` / ``NoiseError/messageTooLong`` for a bad length,
    ///   ``NoiseError/decryptFailed`` if authentication fails, ``NoiseError/invalidPublicKey``
    ///   for a low-order remote key.
    package mutating func readMessage(_ message: [UInt8]) throws -> [UInt8] {
        guard !isComplete else { throw NoiseError.wrongState("the handshake is already complete") }
        guard !isMyTurnToWrite else {
            throw NoiseError.wrongState("handshake message \(messageIndex + 1) must be written, not read, by the \(role)")
        }
        guard message.count <= Noise.maxMessageLength else { throw NoiseError.messageTooLong }
        guard message.count >= Self.overhead(ofMessage: messageIndex) else { throw NoiseError.messageTooShort }

        var next = self
        var offset = 0
        func take(_ count: Int) -> [UInt8] {  // lengths were checked against the overhead above
            defer { offset += count }
            return Array(message[offset..<offset + count])
        }
        switch messageIndex {
        case 0:  // -> e
            next.readEphemeral(take(Noise.publicKeyLength))
        case 1:  // <- e, ee, s, es
            next.readEphemeral(take(Noise.publicKeyLength))
            try next.mixDH(local: next.ephemeral(), remote: next.remoteEphemeral())  // ee
            let remoteStatic = try next.symmetric.decryptAndHash(take(Noise.publicKeyLength + Noise.tagLength))  // s
            next.remoteStaticKey = remoteStatic
            try next.mixDH(local: next.ephemeral(), remote: remoteStatic)  // es
        default:  // -> s, se
            let remoteStatic = try next.symmetric.decryptAndHash(take(Noise.publicKeyLength + Noise.tagLength))  // s
            next.remoteStaticKey = remoteStatic
            try next.mixDH(local: next.ephemeral(), remote: remoteStatic)  // se
        }
        let payload = try next.symmetric.decryptAndHash(Array(message[offset...]))
        next.messageIndex += 1
        self = next
        return payload
    }

    /// Derives the transport cipher states once the handshake is complete, oriented for this
    /// role: `send` encrypts what this side sends, `receive` decrypts what it receives.
    /// - Throws: ``NoiseError/wrongState(_:)`` before the handshake is complete.
    package func split() throws -> (send: NoiseCipherState, receive: NoiseCipherState) {
        guard isComplete else {
            throw NoiseError.wrongState("the handshake is not complete yet (\(messageIndex) of 3 messages)")
        }
        let (initiatorToResponder, responderToInitiator) = symmetric.split()
        switch role {
        case .initiator: return (initiatorToResponder, responderToInitiator)
        case .responder: return (responderToInitiator, initiatorToResponder)
        }
    }

    // MARK: - Tokens

    /// The bytes of handshake message `index` other than the payload, plus the payload tag.
    private static func overhead(ofMessage index: Int) -> Int {
        let encryptedStatic = Noise.publicKeyLength + Noise.tagLength
        switch index {
        case 0: return Noise.publicKeyLength  // e; payload in the clear
        case 1: return Noise.publicKeyLength + encryptedStatic + Noise.tagLength  // e, s, payload tag
        default: return encryptedStatic + Noise.tagLength  // s, payload tag
        }
    }

    /// The `e` token on write: generate (or take the fixed) ephemeral key, mix in its public key.
    private mutating func writeEphemeral() -> [UInt8] {
        let key: Curve25519.KeyAgreement.PrivateKey
        if let fixed = fixedEphemeralKey, let parsed = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: fixed) {
            key = parsed
        } else {
            key = Curve25519.KeyAgreement.PrivateKey()
        }
        ephemeralPrivateKey = Array(key.rawRepresentation)
        let publicKey = Array(key.publicKey.rawRepresentation)
        symmetric.mixHash(publicKey)
        return publicKey
    }

    /// The `e` token on read.
    private mutating func readEphemeral(_ publicKey: [UInt8]) {
        remoteEphemeralKey = publicKey
        symmetric.mixHash(publicKey)
    }

    private func ephemeral() throws -> [UInt8] {
        guard let ephemeralPrivateKey else { throw NoiseError.wrongState("no local ephemeral key") }
        return ephemeralPrivateKey
    }

    private func remoteEphemeral() throws -> [UInt8] {
        guard let remoteEphemeralKey else { throw NoiseError.wrongState("no remote ephemeral key") }
        return remoteEphemeralKey
    }

    /// A DH token: `MixKey(DH(local, remote))`.
    private mutating func mixDH(local: [UInt8], remote: [UInt8]) throws {
        symmetric.mixKey(try Self.dh(privateKey: local, publicKey: remote))
    }

    /// X25519, rejecting malformed keys and the all-zero output of low-order points
    /// (swift-crypto does not reject it itself).
    static func dh(privateKey: [UInt8], publicKey: [UInt8]) throws -> [UInt8] {
        guard publicKey.count == Noise.publicKeyLength else { throw NoiseError.invalidPublicKey }
        let privateKeyValue: Curve25519.KeyAgreement.PrivateKey
        do {
            privateKeyValue = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: privateKey)
        } catch {
            throw NoiseError.invalidKey
        }
        let shared: [UInt8]
        do {
            let publicKeyValue = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: publicKey)
            let secret = try privateKeyValue.sharedSecretFromKeyAgreement(with: publicKeyValue)
            shared = secret.withUnsafeBytes { Array($0) }
        } catch {
            throw NoiseError.invalidPublicKey
        }
        // Constant-time all-zero check.
        var accumulator: UInt8 = 0
        for byte in shared { accumulator |= byte }
        guard shared.count == 32, accumulator != 0 else { throw NoiseError.invalidPublicKey }
        return shared
    }
}
