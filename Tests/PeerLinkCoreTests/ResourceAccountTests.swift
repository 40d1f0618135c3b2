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
    /// or a full backlog, and ends only on the receiver's verdict. When the digest follows,
    /// every byte of the file from 0 goes through the hasher once, in order (a resumed prefix
    /// read for it alone, first), and the digest goes after the last byte, before the close.
    func testStepsMoveEveryByteWithinCreditAndEndOnTheVerdict() {
        var rng = seededGenerator(self)
        for _ in 0..<200 {
            let size = UInt64.random(in: 0...(5 << 20), using: &rng)
            let digestFollows = Bool.random(using: &rng)
            var r = OutgoingResource(size: size, digestFollows: digestFollows)
            var hashed: UInt64 = 0  // the file offset of the next byte the hasher takes
            var digestSent = false
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
                    if digestFollows {
                        XCTAssertEqual(at, hashed, "the hasher takes the bytes read in order, after the resumed prefix")
                        hashed += UInt64(count)
                    }
                case let .skim(at, count):
                    XCTAssertTrue(digestFollows, "only a keyed resource reads bytes it does not send")
                    XCTAssertEqual(at, hashed)
                    XCTAssertGreaterThan(count, 0)
                    XCTAssertLessThanOrEqual(at + UInt64(count), min(offset, size), "skims only the prefix the receiver holds")
                    hashed += UInt64(count)
                    r.skimmed(count)
                case .sendDigest:
                    XCTAssertTrue(digestFollows)
                    XCTAssertFalse(digestSent, "the digest goes once")
                    XCTAssertEqual(position, size, "after the last byte")
                    XCTAssertEqual(hashed, size, "covering every byte of the file")
                    digestSent = true
                    r.sentDigest()
                case let .write(n):
                    XCTAssertGreaterThan(n, 0)
                    XCTAssertLessThanOrEqual(n, min(credit, readAhead, OutgoingResource.writePiece))
                    XCTAssertFalse(full)
                    _ = r.wrote(n)
                    readAhead -= n
                    position += UInt64(n)
                case .close:
                    XCTAssertEqual(position, size)
                    XCTAssertEqual(digestSent, digestFollows, "a keyed resource closes only after its digest")
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

    /// A keyed resource that was not closed after its digest cannot be closed early: the
    /// receiver would have nothing to check the bytes against.
    func testAKeyedResourceClosesOnlyAfterItsDigest() {
        var r = OutgoingResource(size: 10, digestFollows: true)
        r.accepted(offset: 0)
        XCTAssertEqual(r.next(credit: 100, backlogFull: false, readAhead: 0), .read(offset: 0, count: 10))
        XCTAssertTrue(r.wrote(10))
        r.closed()
        XCTAssertEqual(r.phase, .sending, "no close before the digest")
        XCTAssertEqual(r.next(credit: 0, backlogFull: true, readAhead: 0), .sendDigest, "the digest needs no credit")
        r.sentDigest()
        XCTAssertEqual(r.next(credit: 0, backlogFull: false, readAhead: 0), .close)
        r.closed()
        XCTAssertEqual(r.phase, .awaitingVerdict)
    }

    /// A resumed keyed resource reads the prefix the receiver holds for the hasher before any
    /// byte goes, in chunks, whatever the credit.
    func testAResumedKeyedResourceHashesThePrefixFirst() {
        let size = UInt64(OutgoingResource.skimChunk) * 2 + 100
        var r = OutgoingResource(size: size, digestFollows: true)
        r.accepted(offset: size - 50)
        XCTAssertEqual(r.next(credit: 0, backlogFull: false, readAhead: 0), .skim(offset: 0, count: OutgoingResource.skimChunk))
        r.skimmed(OutgoingResource.skimChunk)
        XCTAssertEqual(r.next(credit: 0, backlogFull: false, readAhead: 0),
                       .skim(offset: UInt64(OutgoingResource.skimChunk), count: OutgoingResource.skimChunk))
        r.skimmed(OutgoingResource.skimChunk)
        XCTAssertEqual(r.next(credit: 0, backlogFull: false, readAhead: 0), .skim(offset: size - 100, count: 50))
        r.skimmed(50)
        XCTAssertEqual(r.next(credit: 0, backlogFull: false, readAhead: 0), .wait, "then the credit rules again")
        XCTAssertEqual(r.next(credit: 100, backlogFull: false, readAhead: 0), .read(offset: size - 50, count: 50))
        var plain = OutgoingResource(size: size)
        plain.accepted(offset: size - 50)
        XCTAssertEqual(plain.next(credit: 100, backlogFull: false, readAhead: 0), .read(offset: size - 50, count: 50),
                       "a resource whose offer carried the digest skips the prefix")
    }

    /// The receiver of a keyed offer takes its digest once, only after the last byte, and has
    /// nothing to check against until then; an offer with a digest takes none.
    func testTheReceiverTakesAFollowingDigestOnceAfterTheLastByte() {
        let sha = [UInt8](repeating: 7, count: 32)
        var keyed = IncomingResource(size: 100, resumedFrom: 40)
        XCTAssertEqual(keyed.expectedDigest, .failure(.noDigest))
        XCTAssertEqual(keyed.take(50), .write)
        if case .expected = keyed.digestArrived(sha) { XCTFail("a digest before the last byte is refused") }
        XCTAssertEqual(keyed.take(10), .write)
        XCTAssertEqual(keyed.digestArrived(sha), .expected, "after the last byte taken, even before it is written")
        if case .expected = keyed.digestArrived(sha) { XCTFail("a second digest is refused") }
        XCTAssertEqual(keyed.expectedDigest, .success(sha))

        var offered = IncomingResource(size: 1, resumedFrom: 0, sha256: sha)
        _ = offered.take(1)
        if case .expected = offered.digestArrived([UInt8](repeating: 8, count: 32)) { XCTFail("an offer with a digest takes no other") }
        XCTAssertEqual(offered.expectedDigest, .success(sha))
    }

    /// Partial files are named by content: a keyed offer's name depends on the sender and its
    /// key and can never be one of a digest-named file.
    func testPartialFileNamesKeepSendersAndContentsApart() throws {
        let a = try PeerID(bytes: [UInt8](repeating: 1, count: 20)), b = try PeerID(bytes: [UInt8](repeating: 2, count: 20))
        let key = [UInt8](repeating: 3, count: 32)
        XCTAssertEqual(ResourcePartName.forDigest(key), String(repeating: "03", count: 32) + ".part")
        XCTAssertEqual(ResourcePartName.forKey(key, from: a), ResourcePartName.forKey(key, from: a))
        XCTAssertNotEqual(ResourcePartName.forKey(key, from: a), ResourcePartName.forKey(key, from: b))
        XCTAssertNotEqual(ResourcePartName.forKey(key, from: a), ResourcePartName.forKey([UInt8](repeating: 4, count: 32), from: a))
        XCTAssertTrue(ResourcePartName.forKey(key, from: a).hasPrefix("key-"))
        XCTAssertFalse(ResourcePartName.forDigest(key).hasPrefix("key-"))
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
