import Foundation

/// Constants of the `Noise_XX_25519_ChaChaPoly_SHA256` protocol as used by PeerLink.
package enum Noise {
    /// The largest Noise message (handshake or transport), in bytes, allowed by the Noise spec.
    package static let maxMessageLength = 65535
    /// The length of a ChaChaPoly authentication tag.
    package static let tagLength = 16
    /// The length of a Curve25519 public key (DHLEN).
    package static let publicKeyLength = 32
    /// The length of a SHA-256 digest (HASHLEN).
    package static let hashLength = 32
    /// The largest plaintext that fits in one transport message.
    package static let maxPlaintextLength = maxMessageLength - tagLength
    /// The full Noise protocol name, which seeds the handshake hash.
    package static let protocolName = "Noise_XX_25519_ChaChaPoly_SHA256"
}

/// Errors thrown by the Noise handshake and cipher states. None of them is recoverable for the
/// session: the caller should drop the handshake or link that produced it.
package enum NoiseError: Error, Equatable, Sendable {
    /// Authentication of a ciphertext failed (tampered, wrong key, wrong nonce or wrong associated data).
    case decryptFailed
    /// A message is shorter than the protocol requires at this point.
    case messageTooShort
    /// A message or plaintext would exceed the Noise limit of 65535 bytes per message.
    case messageTooLong
    /// An operation was called in a state that does not allow it (the string says which).
    case wrongState(String)
    /// A remote public key was malformed or of low order (the Diffie-Hellman result was all zeros).
    case invalidPublicKey
    /// A local key had the wrong length.
    case invalidKey
    /// The cipher state has used every nonce; the session must be rekeyed or closed.
    case nonceExhausted
}

extension NoiseError: CustomStringConvertible {
    package var description: String {
        switch self {
        case .decryptFailed:
            return "Noise decryption failed: the message was tampered with, or the key, nonce or associated data do not match."
        case .messageTooShort:
            return "The Noise message is shorter than the protocol requires (truncated or not a Noise message)."
        case .messageTooLong:
            return "The Noise message would exceed the limit of \(Noise.maxMessageLength) bytes."
        case .wrongState(let detail):
            return "The Noise operation is not allowed in the current state: \(detail)."
        case .invalidPublicKey:
            return "The remote Curve25519 public key is malformed or of low order."
        case .invalidKey:
            return "A Noise key has the wrong length."
        case .nonceExhausted:
            return "The Noise cipher state has used all of its nonces and must not encrypt or decrypt any more."
        }
    }
}

extension NoiseError: LocalizedError {
    package var errorDescription: String? { description }
}
