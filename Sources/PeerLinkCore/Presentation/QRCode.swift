// QR code encoder (ISO/IEC 18004, Model 2), byte mode, versions 1–10.
// Self-contained: uses only the Swift standard library.

/// A QR code symbol (ISO/IEC 18004, Model 2), byte mode.
///
/// Versions 1...10 are supported (21×21 up to 57×57 modules). That holds up to
/// 271 bytes at `.low`, 213 at `.medium`, 151 at `.quartile` and 119 at `.high`;
/// longer input throws `QRCodeError.tooLong`.
///
/// Coordinates: `x` is the column, `y` the row, `(0, 0)` is the top-left module.
public struct QRCode: Sendable, Equatable {
    /// Error-correction level: roughly 7 %, 15 %, 25 % and 30 % of codewords recoverable.
    public enum ErrorCorrection: Sendable, CaseIterable {
        case low, medium, quartile, high
    }

    /// The versions this encoder can produce.
    public static let supportedVersions: ClosedRange<Int> = 1...10

    /// Symbol version, 1...10 (see `supportedVersions`; the standard goes to 40).
    public let version: Int
    /// Modules per side: 17 + 4 * version.
    public let size: Int
    /// Data mask pattern, 0...7.
    public let mask: Int
    public let errorCorrection: ErrorCorrection
    /// Dark modules, row-major, size * size.
    public let modules: [Bool]

    /// Whether the module at column `x`, row `y` is dark. Positions outside the
    /// symbol (the quiet zone) are light.
    public func isDark(x: Int, y: Int) -> Bool {
        guard x >= 0, x < size, y >= 0, y < size else { return false }
        return modules[y * size + x]
    }

    /// Encodes `bytes` in byte mode with the smallest version that fits at
    /// `errorCorrection`; `mask` nil picks the best mask by penalty.
    ///
    /// - Parameter mask: a mask pattern in 0...7 to force, or nil. Passing a value
    ///   outside 0...7 is a programming error and traps.
    /// - Throws: `QRCodeError.tooLong` when the data does not fit in version 10.
    public init(bytes: [UInt8], errorCorrection: ErrorCorrection = .medium, mask: Int? = nil) throws(QRCodeError) {
        if let mask {
            precondition((0...7).contains(mask), "QR mask pattern must be in 0...7")
        }
        guard let version = Self.smallestVersion(byteCount: bytes.count, level: errorCorrection) else {
            throw .tooLong(bytes: bytes.count, maximum: Self.maximumByteCount(errorCorrection))
        }
        let blocks = BlockStructure(version: version, level: errorCorrection)
        let data = Self.dataCodewords(bytes, version: version, capacity: blocks.dataCodewords)
        var grid = ModuleGrid(version: version)
        grid.placeCodewords(blocks.finalSequence(data: data))
        let chosen = mask ?? grid.bestMask()
        grid.applyMask(chosen)
        grid.drawFormatInformation(level: errorCorrection, mask: chosen)
        grid.drawVersionInformation()

        self.version = version
        self.size = grid.size
        self.mask = chosen
        self.errorCorrection = errorCorrection
        self.modules = grid.dark
    }

    /// The symbol drawn with Unicode half blocks (two module rows per text line)
    /// inside a quiet zone of `quietZone` modules (negative counts as 0). Returns
    /// lines joined by "\n".
    ///
    /// By default (`invert == false`) the *light* modules and the quiet zone are drawn
    /// as blocks and dark modules are left as spaces: on a terminal with a dark
    /// background and light text this shows dark modules on a light field, which is
    /// what scanners expect. Pass `invert: true` for a light-background terminal
    /// (dark modules drawn as blocks). Every line has `size + 2 * quietZone`
    /// characters; there are `(size + 2 * quietZone + 1) / 2` lines.
    public func terminalText(quietZone: Int = 4, invert: Bool = false) -> String {
        let margin = max(0, quietZone)
        let end = size + margin
        var lines: [String] = []
        var y = -margin
        while y < end {
            var line = ""
            for x in -margin..<end {
                let top = isDark(x: x, y: y) == invert
                // An odd total height leaves the last half line undrawn.
                let bottom = y + 1 < end && isDark(x: x, y: y + 1) == invert
                switch (top, bottom) {
                case (true, true): line.append("█")
                case (true, false): line.append("▀")
                case (false, true): line.append("▄")
                case (false, false): line.append(" ")
                }
            }
            lines.append(line)
            y += 2
        }
        return lines.joined(separator: "\n")
    }
}

/// Errors from `QRCode.init`.
public enum QRCodeError: Error, Equatable, CustomStringConvertible {
    /// The input has `bytes` bytes; at most `maximum` fit at the requested level.
    case tooLong(bytes: Int, maximum: Int)

    public var description: String {
        switch self {
        case let .tooLong(bytes, maximum):
            return "data too long for a QR code: \(bytes) bytes, at most \(maximum) fit at this error-correction level"
        }
    }
}
