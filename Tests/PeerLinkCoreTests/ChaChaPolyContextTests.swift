import Crypto
import TestKit
import XCTest

@testable import PeerLinkCore

/// libcrypto's ChaCha20-Poly1305 (what the transport ciphers use) against swift-crypto's
/// (BoringSSL), an independent implementation: same bytes out, each accepts the other's
/// messages, and a changed byte anywhere is refused.
final class ChaChaPolyContextTests: XCTestCase {
    private func swiftCryptoSeal(_ plain: [UInt8], key: [UInt8], nonce: UInt64, ad: [UInt8]) throws -> [UInt8] {
        let box = try ChaChaPoly.seal(plain, using: SymmetricKey(data: key), nonce: ChaChaPoly.Nonce(data: ChaChaPolyContext.nonceBytes(nonce)),
                                      authenticating: ad)
        return Array(box.ciphertext) + Array(box.tag)
    }

    private func seal(_ c: ChaChaPolyContext, _ plain: [UInt8], nonce: UInt64, ad: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: plain.count + 16)
        let ok = plain.withUnsafeBytes { p in ad.withUnsafeBytes { a in out.withUnsafeMutableBytes { c.seal(p, nonce: nonce, ad: a, into: $0) } } }
        return ok ? out : nil
    }

    private func open(_ c: ChaChaPolyContext, _ sealed: [UInt8], nonce: UInt64, ad: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: sealed.count - 16)
        let ok = sealed.withUnsafeBytes { s in ad.withUnsafeBytes { a in out.withUnsafeMutableBytes { c.open(s, nonce: nonce, ad: a, into: $0) } } }
        return ok ? out : nil
    }

    func testAgreesWithSwiftCryptoBothWays() throws {
        var rng = seededGenerator(self)
        let sizes = [0, 1, 15, 16, 17, 63, 64, 65, 255, 1024, 4096, 16_384, 16_401, Noise.maxPlaintextLength]
        for i in 0..<120 {
            let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let size = i < sizes.count ? sizes[i] : Int.random(in: 0...3000, using: &rng)
            let plain = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let ad = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let nonce = i % 3 == 0 ? UInt64(i) : UInt64.random(in: 0..<UInt64.max, using: &rng)
            let context = try XCTUnwrap(ChaChaPolyContext(key: key))
            let theirs = try swiftCryptoSeal(plain, key: key, nonce: nonce, ad: ad)
            XCTAssertEqual(seal(context, plain, nonce: nonce, ad: ad), theirs, "size \(size), ad \(ad.count)")
            XCTAssertEqual(open(context, theirs, nonce: nonce, ad: ad), plain, "size \(size)")
            // The same context serves the next message with another nonce.
            XCTAssertNil(open(context, theirs, nonce: nonce &+ 1, ad: ad), "wrong nonce")
            XCTAssertEqual(open(context, theirs, nonce: nonce, ad: ad), plain, "after a refusal")
        }
    }

    func testAnyChangedByteIsRefused() throws {
        let key = [UInt8](repeating: 0x42, count: 32)
        let context = try XCTUnwrap(ChaChaPolyContext(key: key))
        let plain = Array("the length prefix is not part of the message".utf8)
        let ad: [UInt8] = [1, 2, 3]
        let sealed = try XCTUnwrap(seal(context, plain, nonce: 9, ad: ad))
        for i in sealed.indices {
            var bad = sealed
            bad[i] ^= 0x01
            XCTAssertNil(open(context, bad, nonce: 9, ad: ad), "byte \(i) changed")
        }
        XCTAssertNil(open(context, sealed, nonce: 9, ad: [1, 2, 4]), "other associated data")
        XCTAssertNil(open(context, Array(sealed.dropLast()) + [0], nonce: 9, ad: ad))
        XCTAssertEqual(open(context, sealed, nonce: 9, ad: ad), plain)
    }

    func testWrongSizesAndKeysAreRefusedNotTrapped() throws {
        XCTAssertNil(ChaChaPolyContext(key: [UInt8](repeating: 1, count: 31)))
        let context = try XCTUnwrap(ChaChaPolyContext(key: [UInt8](repeating: 1, count: 32)))
        var small = [UInt8](repeating: 0, count: 10)
        let plain = [UInt8](repeating: 7, count: 10)
        XCTAssertFalse(plain.withUnsafeBytes { p in small.withUnsafeMutableBytes { context.seal(p, nonce: 0, ad: UnsafeRawBufferPointer(start: nil, count: 0), into: $0) } })
        let short = [UInt8](repeating: 0, count: 15)
        XCTAssertFalse(short.withUnsafeBytes { s in small.withUnsafeMutableBytes { context.open(s, nonce: 0, ad: UnsafeRawBufferPointer(start: nil, count: 0), into: $0) } })
    }

    func testHeadroomPrecedesTheSameMessage() throws {
        let key = (0..<32).map { UInt8($0) }
        var a = NoiseCipherState(key: key), b = NoiseCipherState(key: key)
        for size in [0, 1, 100, 16_384] {
            let plain = [UInt8](repeating: 0x5a, count: size)
            let framed = try a.encrypt(plain, headroom: 2)
            let plainOut = try b.encrypt(plain)
            XCTAssertEqual(Array(framed.prefix(2)), [0, 0])
            XCTAssertEqual(Array(framed.dropFirst(2)), plainOut)
        }
        XCTAssertEqual(a.nonce, 4)
        // Two parts sealed in place are the same message as the parts joined; the tail is a
        // slice from the middle of a larger buffer (a fragment of a message).
        for (h, t) in [(0, 0), (11, 0), (0, 500), (14, 16_000), (1, 1)] {
            let head = [UInt8](repeating: 0x11, count: h)
            let buffer = [UInt8](repeating: 0x33, count: 7) + (0..<t).map { UInt8(truncatingIfNeeded: $0) } + [0x44]
            let tail = buffer[7..<(7 + t)]
            XCTAssertEqual(try a.encrypt(head, tail, headroom: 2), try b.encrypt(head + Array(tail), headroom: 2), "\(h) + \(t)")
        }
        var keyless = NoiseCipherState()
        XCTAssertThrowsError(try keyless.encrypt([1], headroom: 2))
    }

    /// Decrypting in two arrays gives the plaintext cut where `split` said (from the bytes it
    /// was shown), with the spare room asked for; a nil or out-of-range answer keeps it whole.
    func testDecryptingApartCutsWhereSplitSays() throws {
        let key = (0..<32).map { UInt8(255 - $0) }
        var sender = NoiseCipherState(key: key), receiver = NoiseCipherState(key: key)
        let cases: [(size: Int, cut: Int?, spare: Int)] = [(0, nil, 0), (0, 0, 0), (5, 3, 0), (16, 16, 0), (16, 11, 9),
                                                           (17, 11, 0), (4096, 11, 4096), (65_519, 14, 0), (65_519, 0, 0),
                                                           (100, 17, 0), (100, -1, 0), (100, nil, 0)]
        for (size, cut, spare) in cases {
            let plain = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let sealed = try sender.encrypt(plain)
            var shown: [UInt8]?
            let parts = try receiver.decrypt(sealed, peek: 16) { first in
                shown = first
                return cut.map { ($0, spare) }
            }
            XCTAssertEqual(shown, Array(plain.prefix(16)), "split sees the first bytes (\(size))")
            if let cut, cut >= 0, cut <= min(16, size) {
                XCTAssertEqual(parts.head, Array(plain[..<cut]), "\(size) at \(cut)")
                let tail = try XCTUnwrap(parts.tail)
                XCTAssertEqual(tail, Array(plain[cut...]))
                XCTAssertGreaterThanOrEqual(tail.capacity, tail.count + spare)
            } else {
                XCTAssertEqual(parts.head, plain, "kept whole (\(size), cut \(String(describing: cut)))")
                XCTAssertNil(parts.tail)
            }
        }
        XCTAssertEqual(receiver.nonce, UInt64(cases.count))
    }

    /// A changed byte anywhere, in the part `split` sees or after it, fails the whole message
    /// and leaves the nonce where it was, so the real message still opens.
    func testDecryptingApartRefusesAnyChangedByte() throws {
        let key = [UInt8](repeating: 9, count: 32)
        var sender = NoiseCipherState(key: key), receiver = NoiseCipherState(key: key)
        let plain = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        let sealed = try sender.encrypt(plain)
        for i in [0, 5, 15, 16, 17, 150, 299, 300, 315] {
            var bad = sealed
            bad[i] ^= 0x80
            XCTAssertThrowsError(try receiver.decrypt(bad, peek: 16) { _ in (11, 0) }, "byte \(i)") { error in
                XCTAssertEqual(error as? NoiseError, .decryptFailed)
            }
            XCTAssertEqual(receiver.nonce, 0)
        }
        XCTAssertThrowsError(try receiver.decrypt(Array(sealed.prefix(15)), peek: 16) { _ in nil })
        let parts = try receiver.decrypt(sealed, peek: 16) { _ in (11, 0) }
        XCTAssertEqual(parts.head + (parts.tail ?? []), plain)
        var keyless = NoiseCipherState()
        XCTAssertThrowsError(try keyless.decrypt(sealed, peek: 16) { _ in nil })
    }
}
