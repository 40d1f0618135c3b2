import COpenSSL
import Foundation

/// ChaCha20-Poly1305 (RFC 8439) under one key, with libcrypto contexts kept for the key's
/// life: sealing and opening write straight into the caller's buffer, with no allocation
/// or key set-up per message. Calls are serialised by a lock, since the cipher states that
/// hold a context are values that may be copied across tasks.
final class ChaChaPolyContext: @unchecked Sendable {
    static let keyLength = 32
    static let tagLength = 16

    private let lock = NSLock()
    private let key: [UInt8]
    /// Built on first use: a transport cipher state only ever seals or only ever opens, so an
    /// idle link holds one context per direction, not two (under `lock`).
    private var sealerContext: OpaquePointer?
    private var openerContext: OpaquePointer?

    /// Nil when `key` is not 32 bytes or libcrypto cannot set up the cipher.
    init?(key: [UInt8]) {
        guard key.count == Self.keyLength else { return nil }
        self.key = key
        // Fail here, not at the first message, if libcrypto has no ChaCha20-Poly1305.
        guard EVP_chacha20_poly1305() != nil else { return nil }
    }

    deinit {
        if let sealerContext { EVP_CIPHER_CTX_free(sealerContext) }
        if let openerContext { EVP_CIPHER_CTX_free(openerContext) }
    }

    /// A context set up with `key` for one direction.
    private static func context(key: [UInt8], encrypt: Bool) -> OpaquePointer? {
        guard let ctx = EVP_CIPHER_CTX_new() else { return nil }
        let ready = key.withUnsafeBufferPointer { k in
            encrypt ? EVP_EncryptInit_ex(ctx, EVP_chacha20_poly1305(), nil, k.baseAddress, nil) == 1
                    : EVP_DecryptInit_ex(ctx, EVP_chacha20_poly1305(), nil, k.baseAddress, nil) == 1
        }
        guard ready else { EVP_CIPHER_CTX_free(ctx); return nil }
        return ctx
    }

    private func sealerLocked() -> OpaquePointer? {
        if sealerContext == nil { sealerContext = Self.context(key: key, encrypt: true) }
        return sealerContext
    }

    private func openerLocked() -> OpaquePointer? {
        if openerContext == nil { openerContext = Self.context(key: key, encrypt: false) }
        return openerContext
    }

    /// Encrypts `plaintext` into `out`: the ciphertext, then the 16-byte tag. `out` must hold
    /// exactly `plaintext.count + 16` bytes and must not overlap `plaintext`.
    func seal(_ plaintext: UnsafeRawBufferPointer, nonce: UInt64, ad: UnsafeRawBufferPointer,
              into out: UnsafeMutableRawBufferPointer) -> Bool {
        seal(plaintext, UnsafeRawBufferPointer(start: nil, count: 0), nonce: nonce, ad: ad, into: out)
    }

    /// Encrypts the plaintext `first` followed by `second` (two places, one message) into
    /// `out`, which must hold exactly `first.count + second.count + 16` bytes.
    func seal(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, nonce: UInt64,
              ad: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        let total = first.count + second.count
        guard out.count == total + Self.tagLength, let dst = out.bindMemory(to: UInt8.self).baseAddress else { return false }
        return lock.withLock {
            guard let sealer = sealerLocked() else { return false }
            return Self.withNonce(nonce) { iv in
                var n: Int32 = 0, m: Int32 = 0
                guard EVP_EncryptInit_ex(sealer, nil, nil, nil, iv) == 1,
                      Self.update(sealer, ad: ad, encrypt: true),
                      first.isEmpty || EVP_EncryptUpdate(sealer, dst, &n, Self.bytes(first), Int32(first.count)) == 1,
                      second.isEmpty || EVP_EncryptUpdate(sealer, dst + Int(n), &m, Self.bytes(second), Int32(second.count)) == 1,
                      Int(n) + Int(m) == total,
                      EVP_EncryptFinal_ex(sealer, dst + total, &n) == 1,
                      EVP_CIPHER_CTX_ctrl(sealer, EVP_CTRL_AEAD_GET_TAG, Int32(Self.tagLength), dst + total) == 1
                else { return false }
                return true
            }
        }
    }

    /// Decrypts `sealed` (ciphertext, then the tag) into `out`, which must hold exactly
    /// `sealed.count - 16` bytes. False when the tag does not authenticate the message and
    /// `ad`: `out` then holds bytes that must not be used.
    func open(_ sealed: UnsafeRawBufferPointer, nonce: UInt64, ad: UnsafeRawBufferPointer,
              into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard sealed.count >= Self.tagLength, out.count == sealed.count - Self.tagLength,
              let src = sealed.bindMemory(to: UInt8.self).baseAddress else { return false }
        let dst = out.bindMemory(to: UInt8.self).baseAddress
        return lock.withLock {
            guard let opener = openerLocked() else { return false }
            return Self.withNonce(nonce) { iv in
                var n: Int32 = 0
                let tag = UnsafeMutableRawPointer(mutating: src + out.count)
                guard EVP_DecryptInit_ex(opener, nil, nil, nil, iv) == 1,
                      Self.update(opener, ad: ad, encrypt: false),
                      out.isEmpty || EVP_DecryptUpdate(opener, dst, &n, src, Int32(out.count)) == 1,
                      Int(n) == out.count,
                      EVP_CIPHER_CTX_ctrl(opener, EVP_CTRL_AEAD_SET_TAG, Int32(Self.tagLength), tag) == 1
                else { return false }
                var tail: (UInt64, UInt64) = (0, 0)  // a stream cipher writes nothing here
                return withUnsafeMutableBytes(of: &tail) { t in
                    EVP_DecryptFinal_ex(opener, t.bindMemory(to: UInt8.self).baseAddress, &n) == 1
                }
            }
        }
    }

    /// Decrypting one message in steps, under the context's lock: `decrypt` as many times as
    /// the caller likes (in order, each range once), then `verify`. Lets a caller look at the
    /// first plaintext bytes before choosing where the rest goes.
    struct Opening {
        fileprivate let context: OpaquePointer
        fileprivate let sealed: UnsafePointer<UInt8>
        /// Plaintext bytes of the message (the sealed bytes less the tag).
        let count: Int

        /// Decrypts plaintext bytes `range` (ciphertext at the same offsets) into `out`, which
        /// must hold `range.count` bytes.
        func decrypt(_ range: Range<Int>, into out: UnsafeMutableRawPointer) -> Bool {
            guard range.lowerBound >= 0, range.upperBound <= count else { return false }
            guard !range.isEmpty else { return true }
            var n: Int32 = 0
            return EVP_DecryptUpdate(context, out.assumingMemoryBound(to: UInt8.self), &n,
                                     sealed + range.lowerBound, Int32(range.count)) == 1 && Int(n) == range.count
        }

        /// Whether the tag authenticates everything decrypted: call once, after the last range.
        func verify() -> Bool {
            let tag = UnsafeMutableRawPointer(mutating: sealed + count)
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(ChaChaPolyContext.tagLength), tag) == 1 else { return false }
            var n: Int32 = 0
            var tail: (UInt64, UInt64) = (0, 0)  // a stream cipher writes nothing here
            return withUnsafeMutableBytes(of: &tail) { t in
                EVP_DecryptFinal_ex(context, t.bindMemory(to: UInt8.self).baseAddress, &n) == 1
            }
        }
    }

    /// Runs `body` with `sealed` (ciphertext, then the tag; no associated data) ready to be
    /// decrypted in steps. Nil when `sealed` is shorter than a tag or libcrypto fails to start.
    func opening<R>(_ sealed: UnsafeRawBufferPointer, nonce: UInt64, _ body: (Opening) -> R) -> R? {
        guard sealed.count >= Self.tagLength, let src = sealed.bindMemory(to: UInt8.self).baseAddress else { return nil }
        return lock.withLock {
            guard let opener = openerLocked() else { return nil }
            return Self.withNonce(nonce) { iv in
                guard EVP_DecryptInit_ex(opener, nil, nil, nil, iv) == 1 else { return nil }
                return body(Opening(context: opener, sealed: src, count: sealed.count - Self.tagLength))
            }
        }
    }

    /// Feeds the associated data.
    private static func update(_ ctx: OpaquePointer, ad: UnsafeRawBufferPointer, encrypt: Bool) -> Bool {
        guard !ad.isEmpty else { return true }
        var n: Int32 = 0
        return encrypt ? EVP_EncryptUpdate(ctx, nil, &n, bytes(ad), Int32(ad.count)) == 1
                       : EVP_DecryptUpdate(ctx, nil, &n, bytes(ad), Int32(ad.count)) == 1
    }

    private static func bytes(_ raw: UnsafeRawBufferPointer) -> UnsafePointer<UInt8>? {
        raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
    }

    /// The 96-bit nonce of Noise's ChaChaPoly: 4 zero bytes, then the counter as 8
    /// little-endian bytes, built on the stack.
    static func withNonce<R>(_ n: UInt64, _ body: (UnsafePointer<UInt8>?) -> R) -> R {
        let raw: (UInt32, UInt32, UInt32) = (0, UInt32(truncatingIfNeeded: n).littleEndian,
                                             UInt32(truncatingIfNeeded: n >> 32).littleEndian)
        return withUnsafeBytes(of: raw) { body($0.bindMemory(to: UInt8.self).baseAddress) }
    }

    /// The nonce's bytes (for tests).
    static func nonceBytes(_ n: UInt64) -> [UInt8] { withNonce(n) { Array(UnsafeBufferPointer(start: $0, count: 12)) } }
}
