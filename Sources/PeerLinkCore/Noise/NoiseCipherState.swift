import Crypto
import Foundation

/// A Noise `CipherState` for ChaChaPoly: a 32-byte key and a 64-bit nonce counter.
///
/// Obtained from ``NoiseHandshakeXX/split()``. The counter-based `encrypt`/`decrypt` suit
/// ordered byte streams; the explicit-nonce variants suit datagram links, where the caller
/// transmits the nonce and keeps its own replay window. Nonce `2^64 - 1` is reserved by the
/// spec and is never used. Every message, including its 16-byte tag, is limited to
/// ``Noise/maxMessageLength`` bytes.
public struct NoiseCipherState: Sendable {
    /// The key bytes, or nil before `InitializeKey` (handshake use only; `split()` always sets one).
    private var key: [UInt8]?

    /// The nonce the next counter-based `encrypt`/`decrypt` will use.
    public private(set) var nonce: UInt64

    /// An empty cipher state (no key): encryption passes plaintext through, as the spec requires
    /// during the first handshake message.
    init() {
        key = nil
        nonce = 0
    }

    /// A cipher state with a 32-byte key (internal callers only; `nonce` is for tests).
    init(key: [UInt8], nonce: UInt64 = 0) {
        precondition(key.count == 32, "ChaChaPoly keys are 32 bytes")
        self.key = key
        self.nonce = nonce
    }

    /// Whether this cipher state holds a key.
    public var hasKey: Bool { key != nil }

    /// Encrypts `plaintext` with the current nonce, then advances it.
    /// - Returns: ciphertext followed by the 16-byte tag.
    /// - Throws: ``NoiseError/messageTooLong`` if the result would exceed 65535 bytes,
    ///   ``NoiseError/nonceExhausted`` when no nonce is left.
    public mutating func encrypt(_ plaintext: [UInt8], ad: [UInt8] = []) throws -> [UInt8] {
        let result = try encrypt(plaintext, nonce: nonce, ad: ad)
        if key != nil { nonce += 1 }  // cannot overflow: nonce < UInt64.max was checked
        return result
    }

    /// Decrypts `ciphertext` (ciphertext + tag) with the current nonce. The nonce advances only
    /// on success, so a forged message does not desynchronise the stream.
    /// - Throws: ``NoiseError/decryptFailed``, ``NoiseError/messageTooShort``,
    ///   ``NoiseError/messageTooLong``, ``NoiseError/nonceExhausted``.
    public mutating func decrypt(_ ciphertext: [UInt8], ad: [UInt8] = []) throws -> [UInt8] {
        let result = try decrypt(ciphertext, nonce: nonce, ad: ad)
        if key != nil { nonce += 1 }
        return result
    }

    /// Encrypts with an explicit nonce and leaves the internal counter alone (datagram links;
    /// the caller must never reuse a nonce with the same key).
    public func encrypt(_ plaintext: [UInt8], nonce: UInt64, ad: [UInt8] = []) throws -> [UInt8] {
        guard let key else {
            guard plaintext.count <= Noise.maxMessageLength else { throw NoiseError.messageTooLong }
            return plaintext
        }
        guard plaintext.count <= Noise.maxPlaintextLength else { throw NoiseError.messageTooLong }
        guard nonce != UInt64.max else { throw NoiseError.nonceExhausted }
        return try Self.seal(plaintext, key: key, nonce: nonce, ad: ad)
    }

    /// Decrypts with an explicit nonce and leaves the internal counter alone (datagram links;
    /// the caller is responsible for rejecting replays).
    public func decrypt(_ ciphertext: [UInt8], nonce: UInt64, ad: [UInt8] = []) throws -> [UInt8] {
        guard ciphertext.count <= Noise.maxMessageLength else { throw NoiseError.messageTooLong }
        guard let key else { return ciphertext }
        guard ciphertext.count >= Noise.tagLength else { throw NoiseError.messageTooShort }
        guard nonce != UInt64.max else { throw NoiseError.nonceExhausted }
        return try Self.open(ciphertext, key: key, nonce: nonce, ad: ad)
    }

    /// The spec's `Rekey()`: replaces the key with the first 32 bytes of
    /// `ENCRYPT(k, 2^64 - 1, empty, 32 zero bytes)`. The nonce counter is unchanged.
    public mutating func rekey() throws {
        guard let key else { throw NoiseError.wrongState("cannot rekey a cipher state without a key") }
        let sealed = try Self.seal([UInt8](repeating: 0, count: 32), key: key, nonce: UInt64.max, ad: [])
        self.key = Array(sealed.prefix(32))
    }

    // MARK: - ChaChaPoly primitives

    /// The 96-bit ChaChaPoly nonce: 4 zero bytes, then the counter as 8 little-endian bytes.
    static func nonceBytes(_ n: UInt64) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { bytes[4 + i] = UInt8(truncatingIfNeeded: n >> (8 * UInt64(i))) }
        return bytes
    }

    private static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: UInt64, ad: [UInt8]) throws -> [UInt8] {
        do {
            let box = try ChaChaPoly.seal(
                plaintext,
                using: SymmetricKey(data: key),
                nonce: ChaChaPoly.Nonce(data: nonceBytes(nonce)),
                authenticating: ad
            )
            return Array(box.ciphertext) + Array(box.tag)
        } catch {
            throw NoiseError.invalidKey  // only reachable with a malformed key or nonce
        }
    }

    private static func open(_ ciphertext: [UInt8], key: [UInt8], nonce: UInt64, ad: [UInt8]) throws -> [UInt8] {
        let split = ciphertext.count - Noise.tagLength
        do {
            let box = try ChaChaPoly.SealedBox(
                nonce: ChaChaPoly.Nonce(data: nonceBytes(nonce)),
                ciphertext: ciphertext[..<split],
                tag: ciphertext[split...]
            )
            return Array(try ChaChaPoly.open(box, using: SymmetricKey(data: key), authenticating: ad))
        } catch {
            throw NoiseError.decryptFailed
        }
    }
}

extension NoiseCipherState: CustomStringConvertible {
    /// Describes the state without revealing the key.
    public var description: String { "NoiseCipherState(hasKey: \(hasKey), nonce: \(nonce))" }
}
