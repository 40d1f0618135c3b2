// MARK: - Module matrix

/// The module matrix under construction. `isFunction` marks function patterns and the
/// areas reserved for format and version information, which data and masking skip.
struct ModuleGrid {
    /// Alignment pattern centre coordinates per version 1...10.
    static let alignmentCenters: [[Int]] = [
        [], [6, 18], [6, 22], [6, 26], [6, 30], [6, 34],
        [6, 22, 38], [6, 24, 42], [6, 26, 46], [6, 28, 50],
    ]

    let version: Int
    let size: Int
    var dark: [Bool]
    var isFunction: [Bool]

    init(version: Int) {
        self.version = version
        size = 17 + 4 * version
        dark = [Bool](repeating: false, count: size * size)
        isFunction = [Bool](repeating: false, count: size * size)
        drawTimingPatterns()
        drawFinderPatterns()
        drawAlignmentPatterns()
        reserveFormatAndVersionAreas()
    }

    subscript(x: Int, y: Int) -> Bool {
        get { dark[y * size + x] }
        set { dark[y * size + x] = newValue }
    }

    private mutating func setFunction(x: Int, y: Int, dark value: Bool) {
        self[x, y] = value
        isFunction[y * size + x] = true
    }

    private mutating func drawTimingPatterns() {
        for i in 0..<size {
            setFunction(x: 6, y: i, dark: i % 2 == 0)
            setFunction(x: i, y: 6, dark: i % 2 == 0)
        }
    }

    /// 7×7 finder patterns plus their one-module light separators.
    private mutating func drawFinderPatterns() {
        for (cx, cy) in [(3, 3), (size - 4, 3), (3, size - 4)] {
            for dy in -4...4 {
                for dx in -4...4 {
                    let x = cx + dx, y = cy + dy
                    guard x >= 0, x < size, y >= 0, y < size else { continue }
                    let ring = max(abs(dx), abs(dy))
                    setFunction(x: x, y: y, dark: ring != 2 && ring != 4)
                }
            }
        }
    }

    /// 5×5 alignment patterns at every pair of centres except the three finder corners.
    private mutating func drawAlignmentPatterns() {
        let centers = Self.alignmentCenters[version - 1]
        guard let first = centers.first, let last = centers.last else { return }
        for cy in centers {
            for cx in centers {
                let overlapsFinder = (cx == first && cy == first)
                    || (cx == last && cy == first) || (cx == first && cy == last)
                if overlapsFinder { continue }
                for dy in -2...2 {
                    for dx in -2...2 {
                        setFunction(x: cx + dx, y: cy + dy, dark: max(abs(dx), abs(dy)) != 1)
                    }
                }
            }
        }
    }

    /// Format areas, the fixed dark module's position and (version ≥ 7) version areas.
    /// They stay light until drawn after masking.
    private mutating func reserveFormatAndVersionAreas() {
        for i in 0...8 {
            setFunction(x: 8, y: i, dark: self[8, i])
            setFunction(x: i, y: 8, dark: self[i, 8])
        }
        for i in 0..<8 {
            setFunction(x: size - 1 - i, y: 8, dark: false)
            setFunction(x: 8, y: size - 1 - i, dark: false)
        }
        guard version >= 7 else { return }
        for i in 0..<18 {
            setFunction(x: size - 11 + i % 3, y: i / 3, dark: false)
            setFunction(x: i / 3, y: size - 11 + i % 3, dark: false)
        }
    }

    /// Places codewords most significant bit first in two-module-wide columns,
    /// zigzagging up and down from the bottom-right corner and skipping the vertical
    /// timing column. Remainder modules are left light.
    mutating func placeCodewords(_ codewords: [UInt8]) {
        let totalBits = codewords.count * 8
        var bitIndex = 0
        var right = size - 1
        var upward = true
        while right >= 1 {
            if right == 6 { right = 5 }
            for step in 0..<size {
                let y = upward ? size - 1 - step : step
                for x in [right, right - 1] where !isFunction[y * size + x] {
                    guard bitIndex < totalBits else { continue }
                    let byte = codewords[bitIndex / 8]
                    self[x, y] = (byte >> (7 - bitIndex % 8)) & 1 == 1
                    bitIndex += 1
                }
            }
            upward.toggle()
            right -= 2
        }
    }

    /// Whether mask pattern `mask` inverts the module at row `i`, column `j`.
    static func maskInverts(_ mask: Int, i: Int, j: Int) -> Bool {
        switch mask {
        case 0: return (i + j) % 2 == 0
        case 1: return i % 2 == 0
        case 2: return j % 3 == 0
        case 3: return (i + j) % 3 == 0
        case 4: return (i / 2 + j / 3) % 2 == 0
        case 5: return (i * j) % 2 + (i * j) % 3 == 0
        case 6: return ((i * j) % 2 + (i * j) % 3) % 2 == 0
        default: return ((i + j) % 2 + (i * j) % 3) % 2 == 0
        }
    }

    /// XORs the mask pattern over every non-function module.
    mutating func applyMask(_ mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] {
                if Self.maskInverts(mask, i: y, j: x) { self[x, y].toggle() }
            }
        }
    }

    /// The mask with the lowest penalty (lowest number on ties). As in the standard's
    /// encoding procedure, candidates are evaluated before format and version
    /// information (and the fixed dark module) are drawn, so those areas count as light.
    func bestMask() -> Int {
        var best = 0
        var bestScore = Int.max
        for mask in 0..<8 {
            var candidate = self
            candidate.applyMask(mask)
            let score = Penalty.score(candidate.dark, size: size)
            if score < bestScore {
                best = mask
                bestScore = score
            }
        }
        return best
    }

    /// Format information: 2 level bits and 3 mask bits, BCH(15,5) protected, XOR 0x5412.
    static func formatBits(level: QRCode.ErrorCorrection, mask: Int) -> Int {
        let levelBits: Int
        switch level {
        case .low: levelBits = 0b01
        case .medium: levelBits = 0b00
        case .quartile: levelBits = 0b11
        case .high: levelBits = 0b10
        }
        let data = levelBits << 3 | mask
        return (data << 10 | bchRemainder(data, dataBits: 5, generator: 0x537, degree: 10)) ^ 0x5412
    }

    /// Version information: 6 version bits, BCH(18,6) protected.
    static func versionBits(version: Int) -> Int {
        version << 12 | bchRemainder(version, dataBits: 6, generator: 0x1F25, degree: 12)
    }

    /// Remainder of value(x) · x^degree divided by `generator` over GF(2).
    static func bchRemainder(_ value: Int, dataBits: Int, generator: Int, degree: Int) -> Int {
        var remainder = value << degree
        for bit in stride(from: dataBits + degree - 1, through: degree, by: -1)
        where remainder & (1 << bit) != 0 {
            remainder ^= generator << (bit - degree)
        }
        return remainder
    }

    /// Draws both copies of the format information (bit 0 = least significant) and
    /// the dark module.
    mutating func drawFormatInformation(level: QRCode.ErrorCorrection, mask: Int) {
        let bits = Self.formatBits(level: level, mask: mask)
        func bit(_ i: Int) -> Bool { (bits >> i) & 1 == 1 }
        // Around the top-left finder: down column 8, then leftwards along row 8.
        for i in 0...5 { self[8, i] = bit(i) }
        self[8, 7] = bit(6)
        self[8, 8] = bit(7)
        self[7, 8] = bit(8)
        for i in 9...14 { self[14 - i, 8] = bit(i) }
        // Split copy: row 8 at the right edge, column 8 at the bottom edge.
        for i in 0...7 { self[size - 1 - i, 8] = bit(i) }
        for i in 8...14 { self[8, size - 15 + i] = bit(i) }
        self[8, size - 8] = true
    }

    /// Draws both copies of the version information (versions ≥ 7 only).
    mutating func drawVersionInformation() {
        guard version >= 7 else { return }
        let bits = Self.versionBits(version: version)
        for i in 0..<18 {
            let value = (bits >> i) & 1 == 1
            self[size - 11 + i % 3, i / 3] = value
            self[i / 3, size - 11 + i % 3] = value
        }
    }
}
