import Crypto
import Foundation

/// The Noise `SymmetricState` for SHA-256 (spec revision 34, section 5.2): chaining key `ck`,
/// handshake hash `h` and the handshake cipher state.
struct NoiseSymmetricState: Sendable {
    private(set) var chainingKey: [UInt8]
    private(set) var handshakeHash: [UInt8]
    private(set) var cipher: NoiseCipherState

    /// `InitializeSymmetric(protocol_name)`: a name of at most HASHLEN bytes is zero-padded,
    /// a longer one is hashed; `ck` starts equal to `h`.
    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        let h: [UInt8]
        if name.count <= Noise.hashLength {
            h = name + [UInt8](repeating: 0, count: Noise.hashLength - name.count)
        } else {
            h = Self.hash(name)
        }
        handshakeHash = h
        chainingKey = h
        cipher = NoiseCipherState()
    }

    /// `MixKey(ikm)`: `ck, temp_k = HKDF(ck, ikm, 2)`, then `InitializeKey(temp_k)`.
    mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        let (ck, tempK) = Self.hkdf2(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial)
        chainingKey = ck
        cipher = NoiseCipherState(key: tempK)  // HASHLEN == 32, so no truncation is needed
    }

    /// `MixHash(data)`: `h = HASH(h || data)`.
    mutating func mixHash(_ data: [UInt8]) {
        handshakeHash = Self.hash(handshakeHash + data)
    }

    /// `EncryptAndHash(plaintext)`: encrypts with `h` as associated data (or passes the
    /// plaintext through when there is no key yet), then mixes the result into `h`.
    mutating func encryptAndHash(_ plaintext: [UInt8]) throws -> [UInt8] {
        let ciphertext = try cipher.encrypt(plaintext, ad: handshakeHash)
        mixHash(ciphertext)
        return ciphertext
    }

    /// `DecryptAndHash(ciphertext)`: the inverse of ``encryptAndHash(_:)``.
    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws -> [UInt8] {
        let plaintext = try cipher.decrypt(ciphertext, ad: handshakeHash)
        mixHash(ciphertext)
        return plaintext
    }

    /// `Split()`: two cipher states, the first for initiator-to-responder traffic.
    func split() -> (NoiseCipherState, NoiseCipherState) {
        let (k1, k2) = Self.hkdf2(chainingKey: chainingKey, inputKeyMaterial: [])
        return (NoiseCipherState(key: k1), NoiseCipherState(key: k2))
    }

    // MARK: - Hash functions

    static func hash(_ data: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: data))
    }

    static func hmac(key: [UInt8], data: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }

    /// `HKDF(chaining_key, input_key_material, 2)` from spec section 4.3.
    static func hkdf2(chainingKey: [UInt8], inputKeyMaterial: [UInt8]) -> ([UInt8], [UInt8]) {
        let tempKey = hmac(key: chainingKey, data: inputKeyMaterial)
        let output1 = hmac(key: tempKey, data: [0x01])
        let output2 = hmac(key: tempKey, data: output1 + [0x02])
        return (output1, output2)
    }
}
