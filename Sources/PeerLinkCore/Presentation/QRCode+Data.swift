// MARK: - Data encoding

extension QRCode {
    /// Number of bits in the byte-mode character count indicator.
    static func characterCountBits(version: Int) -> Int {
        version <= 9 ? 8 : 16
    }

    /// Bits needed for mode indicator, count and data.
    static func bitsNeeded(byteCount: Int, version: Int) -> Int {
        4 + characterCountBits(version: version) + 8 * byteCount
    }

    static func smallestVersion(byteCount: Int, level: ErrorCorrection) -> Int? {
        supportedVersions.first { version in
            let capacity = BlockStructure(version: version, level: level).dataCodewords * 8
            return byteCount < 1 << characterCountBits(version: version)
                && bitsNeeded(byteCount: byteCount, version: version) <= capacity
        }
    }

    /// Largest byte count that fits in any supported version at `level`.
    static func maximumByteCount(_ level: ErrorCorrection) -> Int {
        supportedVersions.map { version in
            let capacity = BlockStructure(version: version, level: level).dataCodewords * 8
            let available = capacity - bitsNeeded(byteCount: 0, version: version)
            return min(available / 8, (1 << characterCountBits(version: version)) - 1)
        }.max() ?? 0
    }

    /// Byte-mode segment, terminator, bit padding and pad codewords (0xEC, 0x11).
    static func dataCodewords(_ bytes: [UInt8], version: Int, capacity: Int) -> [UInt8] {
        var writer = BitWriter()
        writer.append(0b0100, count: 4)
        writer.append(bytes.count, count: characterCountBits(version: version))
        for byte in bytes { writer.append(Int(byte), count: 8) }
        let capacityBits = capacity * 8
        writer.append(0, count: min(4, capacityBits - writer.count))
        writer.append(0, count: (8 - writer.count % 8) % 8)
        var codewords = writer.bytes()
        var pad: UInt8 = 0xEC
        while codewords.count < capacity {
            codewords.append(pad)
            pad = pad == 0xEC ? 0x11 : 0xEC
        }
        return codewords
    }
}

/// Collects bits most significant first.
struct BitWriter {
    private(set) var bits: [Bool] = []
    var count: Int { bits.count }

    mutating func append(_ value: Int, count: Int) {
        guard count > 0 else { return }
        for shift in stride(from: count - 1, through: 0, by: -1) {
            bits.append((value >> shift) & 1 == 1)
        }
    }

    /// The bits packed into bytes; `count` must be a multiple of 8.
    func bytes() -> [UInt8] {
        stride(from: 0, to: bits.count, by: 8).map { start in
            bits[start..<start + 8].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) }
        }
    }
}
