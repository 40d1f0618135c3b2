import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// SHA-256 of a file's content, read in 1 MiB pieces.
public enum ContentDigest {
    /// The length of a digest in bytes: 32.
    public static let byteCount = 32

    /// SHA-256 of `bytes`.
    public static func of(bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    /// SHA-256 of the file at `path`, read in 1 MiB pieces. Throws a `FileError` when the file
    /// cannot be opened or read.
    public static func of(file path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DurableFile.fail("open", path) }
        defer { close(fd) }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw DurableFile.fail("read", path)
            }
            if n == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<n])) }
        }
        return Array(hasher.finalize())
    }

    /// Lowercase hex, for names and JSON.
    public static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

extension ContentDigest {
    /// Parses lowercase or uppercase hex; nil for anything else.
    public static func bytes(hex: String) -> [UInt8]? {
        let chars = Array(hex.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: chars.count, by: 2) {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
        }
        return out
    }

    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
