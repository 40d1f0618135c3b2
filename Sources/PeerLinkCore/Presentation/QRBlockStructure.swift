// MARK: - Block structure

/// Error-correction block structure of one version and level (ISO/IEC 18004 Table 9).
struct BlockStructure {
    /// Total codewords (data + error correction) per version 1...10.
    static let totalCodewords = [26, 44, 70, 100, 134, 172, 196, 242, 292, 346]

    /// Error-correction codewords per block, per version 1...10.
    static func ecCodewordsPerBlock(_ level: QRCode.ErrorCorrection) -> [Int] {
        switch level {
        case .low: return [7, 10, 15, 20, 26, 18, 20, 24, 30, 18]
        case .medium: return [10, 16, 26, 18, 24, 16, 18, 22, 22, 26]
        case .quartile: return [13, 22, 18, 26, 18, 24, 18, 22, 20, 24]
        case .high: return [17, 28, 22, 16, 22, 28, 26, 26, 24, 28]
        }
    }

    /// Number of error-correction blocks, per version 1...10.
    static func blockCounts(_ level: QRCode.ErrorCorrection) -> [Int] {
        switch level {
        case .low: return [1, 1, 1, 1, 1, 2, 2, 2, 2, 4]
        case .medium: return [1, 1, 1, 2, 2, 4, 4, 4, 5, 5]
        case .quartile: return [1, 1, 2, 2, 4, 4, 6, 6, 8, 8]
        case .high: return [1, 1, 2, 4, 4, 4, 5, 6, 8, 8]
        }
    }

    let totalCodewords: Int
    let ecPerBlock: Int
    let blockCount: Int

    init(version: Int, level: QRCode.ErrorCorrection) {
        let index = version - 1
        totalCodewords = Self.totalCodewords[index]
        ecPerBlock = Self.ecCodewordsPerBlock(level)[index]
        blockCount = Self.blockCounts(level)[index]
    }

    var dataCodewords: Int { totalCodewords - ecPerBlock * blockCount }

    /// Blocks are "short" or one data codeword longer; the short ones come first.
    var shortBlockCount: Int { blockCount - totalCodewords % blockCount }
    var shortBlockDataLength: Int { totalCodewords / blockCount - ecPerBlock }

    /// Splits `data` (exactly `dataCodewords` long) into blocks, appends error correction and interleaves:
    /// data codewords column by column across blocks, then the EC codewords likewise.
    func finalSequence(data: [UInt8]) -> [UInt8] {
        var dataBlocks: [[UInt8]] = []
        var start = 0
        for block in 0..<blockCount {
            let length = shortBlockDataLength + (block < shortBlockCount ? 0 : 1)
            dataBlocks.append(Array(data[start..<start + length]))
            start += length
        }
        let ecBlocks = dataBlocks.map { ReedSolomon.errorCorrection(for: $0, degree: ecPerBlock) }
        var result: [UInt8] = []
        result.reserveCapacity(totalCodewords)
        for column in 0...shortBlockDataLength {
            for block in dataBlocks where column < block.count {
                result.append(block[column])
            }
        }
        for column in 0..<ecPerBlock {
            for block in ecBlocks { result.append(block[column]) }
        }
        return result
    }
}
