@preconcurrency import Crypto
import PeerLinkWire

/// A node's long-term identity: a Curve25519 key pair used as the Noise static key.
/// The peer ID is derived from the public key, so it cannot be claimed without the key.
public struct Identity: Sendable {
    public let privateKey: Curve25519.KeyAgreement.PrivateKey

    /// A new random identity.
    public init() { privateKey = Curve25519.KeyAgreement.PrivateKey() }

    /// An identity from 32 stored private-key bytes.
    public init(privateKeyBytes: [UInt8]) throws {
        guard privateKeyBytes.count == 32 else {
            throw WireError.invalid(field: "identity key", reason: "expected 32 bytes, got \(privateKeyBytes.count)")
        }
        privateKey = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: privateKeyBytes)
    }

    public var privateKeyBytes: [UInt8] { Array(privateKey.rawRepresentation) }
    public var publicKey: [UInt8] { Array(privateKey.publicKey.rawRepresentation) }
    public var peerID: PeerID { PeerID(publicKey: publicKey) }
}

extension PeerID {
    /// Derives the peer ID of a 32-byte Curve25519 public key: the first 20 bytes of its SHA-256.
    public init(publicKey: [UInt8]) {
        self.init(digest: Array(SHA256.hash(data: publicKey)))
    }
}
