/// Accepts each counter value at most once, tolerating reordering within a window
/// (the last `size` values below the highest seen); anything older is refused.
package struct ReplayWindow: Sendable {
    package let size: UInt64
    private var highest: UInt64 = 0
    private var seenAny = false
    private var bits: [UInt64]

    package init(size: Int = 1024) {
        let words = max(1, (size + 63) / 64)
        self.size = UInt64(words * 64)
        self.bits = [UInt64](repeating: 0, count: words)
    }

    /// Whether `n` would be accepted (not yet seen and not too old).
    package func allows(_ n: UInt64) -> Bool {
        guard seenAny else { return true }
        if n > highest { return true }
        if highest - n >= size { return false }
        return !isSet(n)
    }

    /// Records `n` as seen; call only after the datagram authenticated.
    package mutating func record(_ n: UInt64) {
        if !seenAny {
            seenAny = true
            highest = n
        } else if n > highest {
            let shift = n - highest
            if shift >= size {
                for i in bits.indices { bits[i] = 0 }
            } else {
                for k in (highest + 1)..<n { clear(k) }  // shift ≤ size: bounded work
            }
            highest = n
        }
        set(n)
    }

    private func index(_ n: UInt64) -> (Int, UInt64) {
        let slot = n % size
        return (Int(slot / 64), 1 << (slot % 64))
    }
    private func isSet(_ n: UInt64) -> Bool { let (w, m) = index(n); return bits[w] & m != 0 }
    private mutating func set(_ n: UInt64) { let (w, m) = index(n); bits[w] |= m }
    private mutating func clear(_ n: UInt64) { let (w, m) = index(n); bits[w] &= ~m }
}
