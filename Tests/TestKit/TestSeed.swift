import Foundation
import XCTest

/// Random inputs that can be replayed: a generator seeded from `PEERLINK_TEST_SEED` when it is
/// set (decimal or 0x-hex), otherwise from a fresh random seed. When the test fails, the seed
/// is printed with the command line that repeats the run.
///
///     var rng = seededGenerator(self)
///     let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
public func seededGenerator(_ test: XCTestCase, file: StaticString = #filePath, line: UInt = #line) -> SplitMix64 {
    let seed = TestSeed.chosen ?? UInt64.random(in: .min ... .max)
    let name = test.name
    // Printed now as well: a crash ends the process before any teardown could print it.
    print("\(name): random inputs from seed \(TestSeed.hex(seed))")
    fflush(nil)
    test.addTeardownBlock { [weak test] in
        guard let run = test?.testRun, !run.hasSucceeded else { return }
        print("\(name): random inputs from seed \(TestSeed.hex(seed)); repeat with PEERLINK_TEST_SEED=\(TestSeed.hex(seed))")
        fflush(nil)
    }
    return SplitMix64(seed: seed)
}

public enum TestSeed {
    /// The seed `PEERLINK_TEST_SEED` asks for, if any.
    public static var chosen: UInt64? {
        guard let text = ProcessInfo.processInfo.environment["PEERLINK_TEST_SEED"]?.trimmingCharacters(in: .whitespaces),
              !text.isEmpty else { return nil }
        if text.lowercased().hasPrefix("0x") { return UInt64(text.dropFirst(2), radix: 16) }
        return UInt64(text)
    }

    public static func hex(_ seed: UInt64) -> String { "0x" + String(seed, radix: 16) }
}
