import PeerLinkWire

/// Seals and opens the unreliable datagrams of one link (sans I/O). Keys and path tokens are
/// exported from the link's Noise handshake, one pair per direction; every datagram carries
/// an explicit nonce and is refused if it does not authenticate or was seen before.
package struct DatagramPath: Sendable {
    /// Token of datagrams this side sends / receives.
    package let sendToken: [UInt8]
    package let receiveToken: [UInt8]
    private let sendCipher: NoiseCipherState
    private let receiveCipher: NoiseCipherState
    private var nextNonce: UInt64 = 0
    private var window = ReplayWindow()

    /// Derives the path from a completed handshake; `initiator` is this side's role.
    package init(handshake: NoiseHandshakeXX, initiator: Bool) throws {
        let i2r = try handshake.exportKey(label: "udp i2r key"), r2i = try handshake.exportKey(label: "udp r2i key")
        let i2rToken = Array(try handshake.exportKey(label: "udp i2r token").prefix(8))
        let r2iToken = Array(try handshake.exportKey(label: "udp r2i token").prefix(8))
        sendCipher = NoiseCipherState(key: initiator ? i2r : r2i)
        receiveCipher = NoiseCipherState(key: initiator ? r2i : i2r)
        sendToken = initiator ? i2rToken : r2iToken
        receiveToken = initiator ? r2iToken : i2rToken
    }

    /// Largest frame that fits one datagram.
    package static let maxFrame = DatagramEnvelope.maxLength - DatagramEnvelope.headerLength - 16

    /// Encrypts an encoded frame into a datagram.
    package mutating func seal(_ frame: [UInt8]) throws -> [UInt8] {
        guard frame.count <= DatagramPath.maxFrame else {
            throw WireError.limitExceeded(field: "datagram frame size", value: frame.count, limit: DatagramPath.maxFrame)
        }
        guard nextNonce < UInt64.max else { throw NoiseError.nonceExhausted }
        let n = nextNonce
        nextNonce += 1
        let ct = try sendCipher.encrypt(frame, nonce: n, ad: sendToken)
        return DatagramEnvelope(token: sendToken, nonce: n, ciphertext: ct).encode()
    }

    /// Authenticates a received datagram and returns its frame bytes; throws on forgery,
    /// a wrong token, or a replay.
    package mutating func open(_ envelope: DatagramEnvelope) throws -> [UInt8] {
        guard envelope.token == receiveToken else { throw WireError.invalid(field: "datagram", reason: "token of another path") }
        guard window.allows(envelope.nonce) else { throw WireError.invalid(field: "datagram", reason: "replayed or too old (nonce \(envelope.nonce))") }
        let plain = try receiveCipher.decrypt(envelope.ciphertext, nonce: envelope.nonce, ad: receiveToken)
        window.record(envelope.nonce)
        return plain
    }
}
