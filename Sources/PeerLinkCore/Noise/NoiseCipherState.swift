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
    /// The key, or nil before `InitializeKey` (handshake use only; `split()` always sets one).
    /// Built once when the key is set or replaced (`rekey()`), not per message.
    private var key: CipherKey?

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
        self.key = CipherKey(SymmetricKey(data: key))
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
        return try Self.seal(plaintext, key: key.value, nonce: nonce, ad: ad)
    }

    /// Decrypts with an explicit nonce and leaves the internal counter alone (datagram links;
    /// the caller is responsible for rejecting replays).
    public func decrypt(_ ciphertext: [UInt8], nonce: UInt64, ad: [UInt8] = []) throws -> [UInt8] {
        guard ciphertext.count <= Noise.maxMessageLength else { throw NoiseError.messageTooLong }
        guard let key else { return ciphertext }
        guard ciphertext.count >= Noise.tagLength else { throw NoiseError.messageTooShort }
        guard nonce != UInt64.max else { throw NoiseError.nonceExhausted }
        return try Self.open(ciphertext, key: key.value, nonce: nonce, ad: ad)
    }

    /// The spec's `Rekey()`: replaces the key with the first 32 bytes of
    /// `ENCRYPT(k, 2^64 - 1, empty, 32 zero bytes)`. The nonce counter is unchanged.
    public mutating func rekey() throws {
        guard let key else { throw NoiseError.wrongState("cannot rekey a cipher state without a key") }
        let sealed = try Self.seal([UInt8](repeating: 0, count: 32), key: key.value, nonce: UInt64.max, ad: [])
        self.key = CipherKey(SymmetricKey(data: sealed[..<32]))
    }

    // MARK: - ChaChaPoly primitives

    /// The 96-bit ChaChaPoly nonce: 4 zero bytes, then the counter as 8 little-endian bytes,
    /// built on the stack (no array per message).
    private static func withNonce<R>(_ n: UInt64, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let raw: (UInt32, UInt32, UInt32) = (0, UInt32(truncatingIfNeeded: n).littleEndian,
                                             UInt32(truncatingIfNeeded: n >> 32).littleEndian)
        return try withUnsafeBytes(of: raw, body)
    }

    /// The nonce's bytes (for tests).
    static func nonceBytes(_ n: UInt64) -> [UInt8] { withNonce(n) { Array($0) } }

    private static func chachaNonce(_ n: UInt64) throws -> ChaChaPoly.Nonce {
        try withNonce(n) { try ChaChaPoly.Nonce(data: $0) }
    }

    /// Ciphertext and tag in one array: the only copy after encryption is out of the sealed
    /// box's combined bytes (nonce, ciphertext, tag) into the result.
    private static func seal(_ plaintext: [UInt8], key: SymmetricKey, nonce: UInt64, ad: [UInt8]) throws -> [UInt8] {
        do {
            let box = try ChaChaPoly.seal(plaintext, using: key, nonce: chachaNonce(nonce), authenticating: ad)
            let combined = box.combined
            let skip = combined.count - plaintext.count - Noise.tagLength  // the nonce in front
            return [UInt8](unsafeUninitializedCapacity: plaintext.count + Noise.tagLength) { out, count in
                combined.withUnsafeBytes { raw in
                    let body = UnsafeRawBufferPointer(rebasing: raw[skip...])
                    UnsafeMutableRawBufferPointer(out).copyMemory(from: body)
                    count = body.count
                }
            }
        } catch {
            throw NoiseError.invalidKey  // only reachable with a malformed key or nonce
        }
    }

    /// The sealed box is built from one buffer (nonce, then ciphertext and tag as received):
    /// the generic `SealedBox(nonce:ciphertext:tag:)` concatenates three collections, and its
    /// unspecialised appends cost more than the decryption of a small message.
    private static func open(_ ciphertext: [UInt8], key: SymmetricKey, nonce: UInt64, ad: [UInt8]) throws -> [UInt8] {
        var combined = Data(capacity: 12 + ciphertext.count)
        withNonce(nonce) { combined.append(contentsOf: $0) }
        ciphertext.withUnsafeBytes { combined.append(contentsOf: $0) }
        do {
            let box = try ChaChaPoly.SealedBox(combined: combined)
            let plain = try ChaChaPoly.open(box, using: key, authenticating: ad)
            return [UInt8](unsafeUninitializedCapacity: plain.count) { out, count in
                plain.withUnsafeBytes { UnsafeMutableRawBufferPointer(out).copyMemory(from: $0) }
                count = plain.count
            }
        } catch {
            throw NoiseError.decryptFailed
        }
    }
}

/// A ChaChaPoly key, immutable once built. `SymmetricKey` is not marked `Sendable` by
/// swift-crypto, but it is a value whose storage is never written after `init`.
private struct CipherKey: @unchecked Sendable {
    let value: SymmetricKey
    init(_ value: SymmetricKey) { self.value = value }
}

extension NoiseCipherState: CustomStringConvertible {
    /// Describes the state without revealing the key.
    public var description: String { "NoiseCipherState(hasKey: \(hasKey), nonce: \(nonce))" }
}
