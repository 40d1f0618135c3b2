import Foundation

/// A Noise `CipherState` for ChaChaPoly: a 32-byte key and a 64-bit nonce counter.
///
/// Obtained from ``NoiseHandshakeXX/split()``. The counter-based `encrypt`/`decrypt` suit
/// ordered byte streams; the explicit-nonce variants suit datagram links, where the caller
/// transmits the nonce and keeps its own replay window. Nonce `2^64 - 1` is reserved by the
/// spec and is never used. Every message, including its 16-byte tag, is limited to
/// ``Noise/maxMessageLength`` bytes.
package struct NoiseCipherState: Sendable {
    /// The key, or nil before `InitializeKey` (handshake use only; `split()` always sets one).
    /// Built once when the key is set or replaced (`rekey()`), not per message.
    private var key: CipherKey?

    /// The nonce the next counter-based `encrypt`/`decrypt` will use.
    package private(set) var nonce: UInt64

    /// An empty cipher state (no key): encryption passes plaintext through, as the spec requires
    /// during the first handshake message.
    init() {
        key = nil
        nonce = 0
    }

    /// A cipher state with a 32-byte key (internal callers only; `nonce` is for tests).
    init(key: [UInt8], nonce: UInt64 = 0) {
        precondition(key.count == 32, "ChaChaPoly keys are 32 bytes")
        // Only libcrypto's failing to allocate a context can throw here.
        self.key = try? CipherKey(key)
        self.nonce = nonce
    }

    /// Whether this cipher state holds a key.
    package var hasKey: Bool { key != nil }

    /// Encrypts `plaintext` with the current nonce, then advances it.
    /// - Returns: ciphertext followed by the 16-byte tag.
    /// - Throws: ``NoiseError/messageTooLong`` if the result would exceed 65535 bytes,
    ///   ``NoiseError/nonceExhausted`` when no nonce is left.
    package mutating func encrypt(_ plaintext: [UInt8], ad: [UInt8] = []) throws -> [UInt8] {
        let result = try encrypt(plaintext, nonce: nonce, ad: ad)
        if key != nil { nonce += 1 }  // cannot overflow: nonce < UInt64.max was checked
        return result
    }

    /// Encrypts as `encrypt(_:)` does, into an array that starts with `headroom` zero bytes
    /// for the connection's own framing (a stream's length prefix), so that the message is
    /// built once. Requires a key (transport messages only).
    package mutating func encrypt(_ plaintext: [UInt8], headroom: Int) throws -> [UInt8] {
        try encrypt(plaintext, [], headroom: headroom)
    }

    /// Encrypts the plaintext `head` followed by `tail` as one message (read where they are,
    /// not joined first), after `headroom` zero bytes. Requires a key.
    package mutating func encrypt(_ head: [UInt8], _ tail: ArraySlice<UInt8>, headroom: Int) throws -> [UInt8] {
        guard let key else { throw NoiseError.wrongState("encrypting with headroom needs a key") }
        guard head.count + tail.count <= Noise.maxPlaintextLength else { throw NoiseError.messageTooLong }
        guard nonce != UInt64.max else { throw NoiseError.nonceExhausted }
        let result = try Self.seal(head, tail, key: key.value, nonce: nonce, headroom: headroom)
        nonce += 1
        return result
    }

    /// Decrypts `ciphertext` (ciphertext + tag) with the current nonce. The nonce advances only
    /// on success, so a forged message does not desynchronise the stream.
    /// - Throws: ``NoiseError/decryptFailed``, ``NoiseError/messageTooShort``,
    ///   ``NoiseError/messageTooLong``, ``NoiseError/nonceExhausted``.
    package mutating func decrypt(_ ciphertext: [UInt8], ad: [UInt8] = []) throws -> [UInt8] {
        let result = try decrypt(ciphertext, nonce: nonce, ad: ad)
        if key != nil { nonce += 1 }
        return result
    }

    /// Decrypts as `decrypt(_:)` does, into two arrays when `split` says where: `head`, the
    /// plaintext before that offset, and `tail`, the rest in an array of its own with room for
    /// `spare` more bytes. A payload that ends a message then reaches its reader without being
    /// copied out of the plaintext. `split` sees the first `peek` plaintext bytes (all of them
    /// when the message is shorter) and returns nil to keep the plaintext whole (`tail` nil),
    /// as does an offset past what it saw. Those bytes are not authenticated yet (the tag is
    /// checked last), so `split` must only choose where to cut; nothing is returned unless the
    /// tag holds. Requires a key (transport messages only).
    package mutating func decrypt(_ ciphertext: [UInt8], peek: Int,
                                 split: ([UInt8]) -> (offset: Int, spare: Int)?) throws -> (head: [UInt8], tail: [UInt8]?) {
        guard let key else { throw NoiseError.wrongState("decrypting in parts needs a key") }
        guard ciphertext.count <= Noise.maxMessageLength else { throw NoiseError.messageTooLong }
        guard ciphertext.count >= Noise.tagLength else { throw NoiseError.messageTooShort }
        guard nonce != UInt64.max else { throw NoiseError.nonceExhausted }
        let parts = ciphertext.withUnsafeBytes { c in
            key.value.opening(c, nonce: nonce) { Self.open(in: $0, peek: peek, split: split) }
        }
        guard let result = parts ?? nil else { throw NoiseError.decryptFailed }
        nonce += 1
        return result
    }

    /// The steps of the split `decrypt`, inside one opening; nil when any step or the tag fails.
    private static func open(in o: ChaChaPolyContext.Opening, peek: Int,
                             split: ([UInt8]) -> (offset: Int, spare: Int)?) -> (head: [UInt8], tail: [UInt8]?)? {
        let seen = min(max(peek, 0), o.count)
        var ok = true
        let first = [UInt8](unsafeUninitializedCapacity: seen) { out, count in
            if let base = out.baseAddress { ok = o.decrypt(0..<seen, into: base) }
            count = ok ? seen : 0
        }
        guard ok else { return nil }
        let cut = split(first).flatMap { $0.offset >= 0 && $0.offset <= seen ? $0 : nil }
        let start = cut?.offset ?? 0
        // What `first` holds beyond the cut goes in front; the cipher writes the rest after it.
        let kept = seen - start
        let restCount = o.count - start
        let rest = [UInt8](unsafeUninitializedCapacity: restCount + max(cut?.spare ?? 0, 0)) { out, count in
            count = 0
            guard let base = UnsafeMutableRawPointer(out.baseAddress) else { ok = restCount == 0; return }
            first.withUnsafeBytes { f in
                if kept > 0, let from = f.baseAddress { base.copyMemory(from: from + start, byteCount: kept) }
            }
            ok = o.decrypt(seen..<o.count, into: base + kept)
            count = ok ? restCount : 0
        }
        guard ok, o.verify() else { return nil }
        guard let cut else { return (rest, nil) }
        return (Array(first[..<cut.offset]), rest)
    }

    /// Encrypts with an explicit nonce and leaves the internal counter alone (datagram links;
    /// the caller must never reuse a nonce with the same key).
    package func encrypt(_ plaintext: [UInt8], nonce: UInt64, ad: [UInt8] = []) throws -> [UInt8] {
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
    package func decrypt(_ ciphertext: [UInt8], nonce: UInt64, ad: [UInt8] = []) throws -> [UInt8] {
        guard ciphertext.count <= Noise.maxMessageLength else { throw NoiseError.messageTooLong }
        guard let key else { return ciphertext }
        guard ciphertext.count >= Noise.tagLength else { throw NoiseError.messageTooShort }
        guard nonce != UInt64.max else { throw NoiseError.nonceExhausted }
        return try Self.open(ciphertext, key: key.value, nonce: nonce, ad: ad)
    }

    /// The spec's `Rekey()`: replaces the key with the first 32 bytes of
    /// `ENCRYPT(k, 2^64 - 1, empty, 32 zero bytes)`. The nonce counter is unchanged.
    package mutating func rekey() throws {
        guard let key else { throw NoiseError.wrongState("cannot rekey a cipher state without a key") }
        let sealed = try Self.seal([UInt8](repeating: 0, count: 32), key: key.value, nonce: UInt64.max, ad: [])
        self.key = try CipherKey(Array(sealed[..<32]))
    }

    // MARK: - ChaChaPoly primitives

    /// The nonce's bytes (for tests).
    static func nonceBytes(_ n: UInt64) -> [UInt8] { ChaChaPolyContext.nonceBytes(n) }

    /// Ciphertext and tag of the plaintext `head` followed by `tail`, in one array of the
    /// final size (after `headroom` zero bytes), written once by the cipher.
    private static func seal(_ head: [UInt8], _ tail: ArraySlice<UInt8> = [], key: ChaChaPolyContext, nonce: UInt64,
                             ad: [UInt8] = [], headroom: Int = 0) throws -> [UInt8] {
        var ok = false
        let sealed = [UInt8](unsafeUninitializedCapacity: headroom + head.count + tail.count + Noise.tagLength) { out, count in
            let all = UnsafeMutableRawBufferPointer(out)
            all.prefix(headroom).initializeMemory(as: UInt8.self, repeating: 0)
            ok = head.withUnsafeBytes { h in
                tail.withUnsafeBytes { t in
                    ad.withUnsafeBytes { a in key.seal(h, t, nonce: nonce, ad: a, into: UnsafeMutableRawBufferPointer(rebasing: all[headroom...])) }
                }
            }
            count = ok ? all.count : 0
        }
        guard ok else { throw NoiseError.invalidKey }  // only reachable if libcrypto fails
        return sealed
    }

    /// The plaintext in one array of its final size, written once by the cipher.
    private static func open(_ ciphertext: [UInt8], key: ChaChaPolyContext, nonce: UInt64, ad: [UInt8]) throws -> [UInt8] {
        var ok = false
        let plain = [UInt8](unsafeUninitializedCapacity: ciphertext.count - Noise.tagLength) { out, count in
            ok = ciphertext.withUnsafeBytes { c in
                ad.withUnsafeBytes { a in key.open(c, nonce: nonce, ad: a, into: UnsafeMutableRawBufferPointer(out)) }
            }
            count = ok ? out.count : 0
        }
        guard ok else { throw NoiseError.decryptFailed }
        return plain
    }
}

/// A cipher key, immutable once built: its libcrypto contexts.
private struct CipherKey: Sendable {
    let value: ChaChaPolyContext
    init(_ key: [UInt8]) throws {
        guard let context = ChaChaPolyContext(key: key) else { throw NoiseError.invalidKey }
        value = context
    }
}

extension NoiseCipherState: CustomStringConvertible {
    /// Describes the state without revealing the key.
    package var description: String { "NoiseCipherState(hasKey: \(hasKey), nonce: \(nonce))" }
}
