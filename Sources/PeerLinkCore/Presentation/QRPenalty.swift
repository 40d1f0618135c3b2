// MARK: - Mask evaluation

/// The four penalty rules of ISO/IEC 18004 (N1 = 3, N2 = 3, N3 = 40, N4 = 10).
enum Penalty {
    static func score(_ modules: [Bool], size: Int) -> Int {
        var total = 0
        for index in 0..<size {
            let row = Array(modules[index * size..<(index + 1) * size])
            let column = (0..<size).map { modules[$0 * size + index] }
            total += runs(row) + runs(column) + finderLike(row) + finderLike(column)
        }
        return total + blocks(modules, size: size) + balance(modules)
    }

    /// Rule 1: each run of five or more same-coloured modules scores 3 + (length − 5).
    static func runs(_ line: [Bool]) -> Int {
        var score = 0
        var runLength = 0
        var previous: Bool?
        for module in line {
            if module == previous {
                runLength += 1
            } else {
                if runLength >= 5 { score += runLength - 2 }
                runLength = 1
                previous = module
            }
        }
        if runLength >= 5 { score += runLength - 2 }
        return score
    }

    /// Rule 2: each 2×2 block of one colour scores 3 (blocks may overlap).
    static func blocks(_ modules: [Bool], size: Int) -> Int {
        var score = 0
        for y in 0..<size - 1 {
            for x in 0..<size - 1 {
                let colour = modules[y * size + x]
                if modules[y * size + x + 1] == colour,
                   modules[(y + 1) * size + x] == colour,
                   modules[(y + 1) * size + x + 1] == colour {
                    score += 3
                }
            }
        }
        return score
    }

    /// Rule 3: each dark-light-dark-dark-dark-light-dark (1:1:3:1:1) sequence with four
    /// light modules before or after it scores 40. Outside the symbol counts as light.
    static func finderLike(_ line: [Bool]) -> Int {
        let pattern = [true, false, true, true, true, false, true]
        guard line.count >= pattern.count else { return 0 }
        func allLight(_ range: Range<Int>) -> Bool {
            line[range.clamped(to: 0..<line.count)].allSatisfy { !$0 }
        }
        var score = 0
        for start in 0...(line.count - pattern.count)
        where pattern.indices.allSatisfy({ line[start + $0] == pattern[$0] }) {
            if allLight(start - 4..<start) || allLight(start + 7..<start + 11) {
                score += 40
            }
        }
        return score
    }

    /// Rule 4: 10 points for each full 5 % step the dark proportion deviates from 50 %.
    static func balance(_ modules: [Bool]) -> Int {
        let total = modules.count
        guard total > 0 else { return 0 }
        let darkCount = modules.reduce(0) { $0 + ($1 ? 1 : 0) }
        return 10 * (abs(darkCount * 20 - total * 10) / total)
    }
}
