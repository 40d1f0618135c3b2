import PeerLinkCore
import PeerLinkWire
import TestKit
import XCTest

/// The resource decisions of the core (IncomingResource, OutgoingResource, ResourceAdmission,
/// ResourceName), without files or links.
final class ResourceAccountTests: XCTestCase {
    // MARK: receiver

    /// Write completions that come back in any order, each with its own count, add up to what
    /// was taken; progress is reported at most every step and always at the last byte.
    func testCompletionsInAnyOrderAddUpAndReportTheLastByte() {
        var rng = seededGenerator(self)
        for _ in 0..<200 {
            let size = UInt64.random(in: 0...(3 << 20), using: &rng)
            let resumed = UInt64.random(in: 0...size, using: &rng)
            var account = IncomingResource(size: size, resumedFrom: resumed)
            var left = size - resumed
            var pending: [Int] = []
            var reports: [UInt64] = []
            while left > 0 || !pending.isEmpty {
                if left > 0, pending.isEmpty || Bool.random(using: &rng) {
                    let n = Int(min(left, UInt64.random(in: 1...200_000, using: &rng)))
                    XCTAssertEqual(account.take(n), .write)
                    pending.append(n)
                    left -= UInt64(n)
                } else {
                    let n = pending.remove(at: Int.random(in: 0..<pending.count, using: &rng))
                    if account.wrote(n) { reports.append(account.received) }
                }
                XCTAssertLessThanOrEqual(account.received + account.queued, size)
            }
            XCTAssertTrue(account.isComplete)
            XCTAssertEqual(account.received, size)
            if size > resumed { XCTAssertEqual(reports.last, size, "the last byte is always reported") }
            var previous = resumed
            for r in reports.dropLast() {
                XCTAssertGreaterThanOrEqual(r - previous, IncomingResource.progressStep)
                previous = r
            }
        }
    }

    func testBytesPastTheAnnouncedSizeAreRefusedAndNotCounted() {
        var account = IncomingResource(size: 100, resumedFrom: 40)
        XCTAssertEqual(account.take(50), .write)
        XCTAssertEqual(account.take(11), .overrun(announced: 100))
        XCTAssertEqual(account.queued, 50)
        XCTAssertEqual(account.take(10), .write)
        XCTAssertEqual(account.take(1), .overrun(announced: 100))
    }

    func testAStoppedWriterKeepsWhatItHeldAndLateCompletionsCountNothing() {
        var account = IncomingResource(size: 1000, resumedFrom: 0)
        _ = account.take(600)
        account.stopped(holding: 300)
        XCTAssertEqual(account.received, 300)
        XCTAssertEqual(account.queued, 0)
        XCTAssertFalse(account.wrote(300), "a completion after the stop adds nothing")
        XCTAssertEqual(account.received, 300)
        XCTAssertEqual(account.failure(diskFull: true, held: 300, reason: ""), .diskFull(held: 300, size: 1000))
        XCTAssertEqual(account.failure(diskFull: false, held: 300, reason: "EIO"), .writeFailed(held: 300, size: 1000, reason: "EIO"))
    }

    func testAResumeStartsFromWhatThePartFileHeld() {
        let account = IncomingResource(size: 10, resumedFrom: 25)
        XCTAssertEqual(account.resumedFrom, 10, "a part file longer than the offer is clamped")
        XCTAssertTrue(account.isComplete)
    }

    // MARK: admission

    func testAdmissionCountsTheMarginAndOtherTransfersPromises() {
        XCTAssertEqual(ResourceAdmission.decide(size: 100, held: 0, free: 200, keepFree: 50, promised: 50), .accept(reserve: 100))
        XCTAssertEqual(ResourceAdmission.decide(size: 100, held: 0, free: 200, keepFree: 50, promised: 51),
                       .refuse(.noSpace(needed: 100, available: 99, margin: 50)))
        XCTAssertEqual(ResourceAdmission.decide(size: 100, held: 60, free: 40, keepFree: 0, promised: 0), .accept(reserve: 40),
                       "only the bytes still to come need room")
        XCTAssertEqual(ResourceAdmission.decide(size: 100, held: 0, free: 10, keepFree: 64, promised: 0),
                       .refuse(.noSpace(needed: 100, available: 0, margin: 64)))
        XCTAssertEqual(ResourceAdmission.decide(size: 100, held: 0, free: nil, keepFree: 64, promised: 0), .accept(reserve: 100),
                       "free space unknown: accepted, a full disk is met as it comes")
        XCTAssertEqual(ResourceAdmission.decide(size: 1, held: 0, free: .max, keepFree: .max, promised: .max),
                       .refuse(.noSpace(needed: 1, available: 0, margin: .max)), "no overflow")
        XCTAssertEqual(ResourceAdmission.decide(size: 0, held: 0, free: 0, keepFree: 10, promised: 0), .accept(reserve: 0),
                       "an empty file always fits")
    }

    // MARK: sender

    /// A sender that follows the steps moves every byte once, in order, never past its credit
    /// or a full backlog, and ends only on the receiver's verdict.
    func testStepsMoveEveryByteWithinCreditAndEndOnTheVerdict() {
        var rng = seededGenerator(self)
        for _ in 0..<200 {
            let size = UInt64.random(in: 0...(5 << 20), using: &rng)
            var r = OutgoingResource(size: size)
            XCTAssertEqual(r.next(credit: 1 << 20, backlogFull: false, readAhead: 0), .wait, "nothing before the receiver answers")
            let offset = UInt64.random(in: 0...size + 10, using: &rng)
            r.accepted(offset: offset)
            var position = min(offset, size)  // the file offset of the next byte to go
            var readAhead = 0
            var steps = 0
            loop: while true {
                steps += 1
                XCTAssertLessThan(steps, 100_000)
                let credit = Int.random(in: 0...200_000, using: &rng)
                let full = Int.random(in: 0..<8, using: &rng) == 0
                switch r.next(credit: credit, backlogFull: full, readAhead: readAhead) {
                case .wait:
                    XCTAssertTrue(credit == 0 || full, "waits only without credit or room")
                case let .read(at, count):
                    XCTAssertEqual(readAhead, 0)
                    XCTAssertEqual(at, position, "reads where the bytes stand")
                    XCTAssertGreaterThan(count, 0)
                    XCTAssertLessThanOrEqual(UInt64(count), size - at)
                    readAhead = count
                case let .write(n):
                    XCTAssertGreaterThan(n, 0)
                    XCTAssertLessThanOrEqual(n, min(credit, readAhead, OutgoingResource.writePiece))
                    XCTAssertFalse(full)
                    _ = r.wrote(n)
                    readAhead -= n
                    position += UInt64(n)
                case .close:
                    XCTAssertEqual(position, size)
                    r.closed()
                    XCTAssertEqual(r.next(credit: credit, backlogFull: full, readAhead: 0), .wait, "waits for the verdict")
                    r.verdict(ok: true)
                case .done:
                    break loop
                }
            }
            XCTAssertEqual(r.phase, .finished(ok: true))
            XCTAssertEqual(r.sent, size)
        }
    }

    func testARefusalEndsTheSendAndSaysWhetherItWasDeclinedOrCancelled() {
        var declined = OutgoingResource(size: 10)
        declined.refused(nil)
        XCTAssertEqual(declined.next(credit: 10, backlogFull: false, readAhead: 0), .done)
        XCTAssertFalse(declined.wasAccepted)

        var cancelled = OutgoingResource(size: 10)
        cancelled.accepted(offset: 0)
        _ = cancelled.wrote(4)
        cancelled.refused(.diskFull(held: 4, size: 10))
        XCTAssertEqual(cancelled.phase, .refused(.diskFull(held: 4, size: 10)))
        XCTAssertTrue(cancelled.wasAccepted)
        XCTAssertFalse(cancelled.wrote(4), "nothing counts after a refusal")
        cancelled.accepted(offset: 0)
        XCTAssertEqual(cancelled.phase, .refused(.diskFull(held: 4, size: 10)), "a late accept does not revive it")
    }

    func testAVerdictBeforeTheLastByteIsIgnoredAndOneAfterItIsFinal() {
        var r = OutgoingResource(size: 10)
        r.accepted(offset: 0)
        r.verdict(ok: true)
        XCTAssertEqual(r.phase, .sending, "no verdict before every byte went")
        XCTAssertTrue(r.wrote(10), "the last byte is reported")
        r.closed()
        r.verdict(ok: false)
        r.refused(nil)
        XCTAssertEqual(r.phase, .finished(ok: false), "a cancel after the verdict changes nothing")
    }

    // MARK: names

    func testNamesFromTheSenderNeverLeaveTheInbox() {
        XCTAssertEqual(ResourceName.safe("report.pdf"), "report.pdf")
        XCTAssertEqual(ResourceName.safe("../../etc/passwd"), "passwd")
        XCTAssertEqual(ResourceName.safe("a\\b\\c.txt"), "c.txt")
        XCTAssertEqual(ResourceName.safe(".."), "received")
        XCTAssertEqual(ResourceName.safe(""), "received")
        XCTAssertEqual(ResourceName.safe("/"), "received")
        XCTAssertEqual(ResourceName.safe(".bashrc"), "received-bashrc")
        XCTAssertEqual(ResourceName.safe("x\u{0}y\u{7}z\n"), "xyz")
        var rng = seededGenerator(self)
        for _ in 0..<2000 {
            // Mostly the characters that matter to a path: dots, slashes, NUL, controls.
            let alphabet: [Unicode.Scalar] = [".", ".", "/", "\\", "\0", "\n", "\u{7f}", "a", "é", "\u{85}"]
            let scalars = (0..<Int.random(in: 0...12, using: &rng)).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] }
            let name = ResourceName.safe(String(String.UnicodeScalarView(scalars)))
            XCTAssertFalse(name.isEmpty)
            XCTAssertFalse(name.contains("/") || name.contains("\\") || name.contains("\0"), name)
            XCTAssertFalse(name.hasPrefix("."), name)
            XCTAssertFalse(name.unicodeScalars.contains { $0.properties.generalCategory == .control }, name)
        }
    }
}
