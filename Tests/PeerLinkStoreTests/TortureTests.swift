import Foundation
import PeerLinkStore
import TestKit
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The ledger tested the way databases test themselves: the torture workload (a sender and a
/// receiver ledger exchanging items through files, peerlink-store-torture) is killed at every
/// named crash point and at random moments, restarted until it finishes, and the directory
/// checked after every crash and at the end (docs/STORE.md).
final class TortureTests: XCTestCase {
    /// Which hits of each point to die at: the first, and one in the middle of the work where
    /// the point is hit more than once per run.
    static let hits: [String: [Int]] = [
        CrashPoint.expireAfterMark: [1],
        CrashPoint.purgeAfterCommit: [1],
    ]

    func testEveryCrashPointThenResume() throws {
        let seed = TestSeed.chosen ?? 0x5EED
        print("TortureTests: crash points over seed \(TestSeed.hex(seed)) (PEERLINK_TEST_SEED repeats)")
        var worst: UInt64 = 0
        for point in CrashPoint.all + [TortureRun.chunkPoint] {
            for hit in Self.hits[point] ?? [1, 4] {
                let context = "\(point):\(hit)"
                let dir = scratchDirectory(self, "point")
                var torture = TortureRun(dir: dir, items: 10, seed: seed)
                XCTAssertEqual(try torture.run(crashAt: context), .killed, "\(context): the point was not reached")
                try checkNothingPartialVisible(dir, context)
                XCTAssertEqual(try torture.run(), .finished, "\(context): the restart")
                try checkConverged(dir, context)
                let redo = RedoReport(dir: dir)
                worst = max(worst, redo.resentBytes.values.max() ?? 0)
                XCTAssertLessThanOrEqual(redo.recoverySteps[2] ?? 0, 1, "\(context): the restart finished more than one step")
            }
        }
        print("TortureTests: crash points: at most \(worst) payload bytes resent after a restart")
        XCTAssertLessThanOrEqual(worst, UInt64(TortureRun.chunk))
    }

    func testRandomKillsThenResume() throws {
        var rng = seededGenerator(self)
        var kills = 0, rounds = 0
        var resent: [UInt64] = []
        var steps: [Int] = []
        while kills < 12 {
            rounds += 1
            let dir = scratchDirectory(self, "kill")
            var torture = TortureRun(dir: dir, items: 32, seed: rng.next())
            var finished = false
            while !finished {
                guard torture.runs < 200 else { return XCTFail("round \(rounds): not finished after 200 runs") }
                let p = try torture.start()
                usleep(UInt32.random(in: 5_000...60_000, using: &rng))
                kill(p.processIdentifier, SIGKILL)
                switch TortureRun.end(of: p, dir: dir) {
                case .finished: finished = true
                case .killed:
                    kills += 1
                    try checkNothingPartialVisible(dir, "round \(rounds) kill \(kills)")
                case let .failed(why): return XCTFail("round \(rounds) run \(torture.runs): \(why)")
                }
            }
            try checkConverged(dir, "round \(rounds)")
            let redo = RedoReport(dir: dir)
            resent += redo.resentBytes.values
            steps += redo.recoverySteps.values
        }
        let worst = resent.max() ?? 0
        print("TortureTests: \(kills) random kills over \(rounds) rounds; per restart at most \(worst) payload bytes resent, at most \(steps.max() ?? 0) steps finished at open")
        XCTAssertLessThanOrEqual(worst, UInt64(TortureRun.chunk), "resent after a restart: at most one chunk")
    }
}
