// MARK: - Reed–Solomon over GF(256)

/// Arithmetic in GF(2^8) with the QR code field polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11D).
enum GF256 {
    /// exp[i] = α^i for i in 0..<255, with α = 2.
    static let exp: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 255)
        var value = 1
        for i in 0..<255 {
            table[i] = UInt8(value)
            value <<= 1
            if value & 0x100 != 0 { value ^= 0x11D }
        }
        return table
    }()

    /// log[α^i] = i; log[0] is unused.
    static let log: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 256)
        for (i, value) in exp.enumerated() { table[Int(value)] = UInt8(i) }
        return table
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        guard a != 0, b != 0 else { return 0 }
        return exp[(Int(log[Int(a)]) + Int(log[Int(b)])) % 255]
    }
}

enum ReedSolomon {
    /// Generator polynomial ∏ (x − α^i) for i in 0..<degree, coefficients highest
    /// degree first (the leading coefficient is 1).
    static func generator(degree: Int) -> [UInt8] {
        var poly: [UInt8] = [1]
        for i in 0..<degree {
            let root = GF256.exp[i]
            var product = [UInt8](repeating: 0, count: poly.count + 1)
            for (j, coefficient) in poly.enumerated() {
                product[j] ^= coefficient
                product[j + 1] ^= GF256.multiply(coefficient, root)
            }
            poly = product
        }
        return poly
    }

    /// The `degree` error-correction codewords for `data`: the remainder of
    /// data(x) · x^degree divided by the generator polynomial.
    static func errorCorrection(for data: [UInt8], degree: Int) -> [UInt8] {
        let gen = generator(degree: degree)
        var remainder = [UInt8](repeating: 0, count: degree)
        for byte in data {
            let factor = byte ^ remainder[0]
            remainder.removeFirst()
            remainder.append(0)
            for i in 0..<degree {
                remainder[i] ^= GF256.multiply(gen[i + 1], factor)
            }
        }
        return remainder
    }
}
