import Foundation
import Synchronization
import TestKit
import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth
#if canImport(Glibc)
import Glibc
#endif

/// When an RFCOMM dial is tried again (`RFCOMMTransport.whenFree`): while the kernel still
/// holds the previous channel (EBUSY), and, for a device met in the last 3 s, while the remote
/// still winds its side down (ECONNREFUSED, ECONNRESET). Real time: the pauses between
/// attempts are the redial's own (at most `busyWait` in all).
final class RFCOMMRedialTests: XCTestCase {
    /// Runs `whenFree` with attempts that fail with `errors` in turn and then succeed; returns
    /// the outcome and how many attempts were made.
    private func run(remote: String, failing errors: [Int32]) async throws -> (Result<Int, Error>, Int) {
        let attempts = Attempts()
        let result: Result<Int, Error> = await {
            do {
                return .success(try await within(30, "the redial ends") {
                    try await RFCOMMTransport.whenFree(remote: remote, timeout: 20) { () async throws -> Int in
                        let n = attempts.next()
                        if n <= errors.count { throw TransportError.system(operation: "RFCOMM connect", errno: errors[n - 1]) }
                        return n
                    }
                })
            } catch {
                return .failure(error)
            }
        }()
        return (result, attempts.count)
    }

    private func errno(of result: Result<Int, Error>) -> Int32? {
        guard case let .failure(TransportError.system(_, e)) = result else { return nil }
        return e
    }

    func testBusyChannelIsDialledAgainUntilFree() async throws {
        let (result, attempts) = try await run(remote: "00:AA:01:7E:00:01", failing: [EBUSY, EBUSY])
        XCTAssertEqual(try result.get(), 3, "the third attempt connects")
        XCTAssertEqual(attempts, 3)
    }

    func testRefusalFromADeviceNotMetRecentlyIsFinal() async throws {
        let (result, attempts) = try await run(remote: "00:AA:01:7E:00:02", failing: [ECONNREFUSED])
        XCTAssertEqual(errno(of: result), ECONNREFUSED)
        XCTAssertEqual(attempts, 1, "no second attempt")
    }

    func testRefusalOrResetFromADeviceWeAreLinkedToIsDialledAgain() async throws {
        let remote = "00:AA:01:7E:00:03"
        let link = StaleACL.register(remote: remote)
        let (result, attempts) = try await run(remote: remote, failing: [ECONNREFUSED, ECONNRESET])
        withExtendedLifetime(link) {}
        XCTAssertEqual(try result.get(), 3, "the third attempt connects")
        XCTAssertEqual(attempts, 3)
    }

    func testBusyForLongerThanTheBusyWaitFails() async throws {
        let (result, attempts) = try await run(remote: "00:AA:01:7E:00:04", failing: Array(repeating: EBUSY, count: 100))
        XCTAssertEqual(errno(of: result), EBUSY, "the last EBUSY is reported")
        XCTAssertGreaterThan(attempts, 1)
        XCTAssertLessThan(attempts, 100, "it gave up")
    }

    func testOtherErrorsAreFinal() async throws {
        let (result, attempts) = try await run(remote: "00:AA:01:7E:00:05", failing: [EHOSTDOWN])
        XCTAssertEqual(errno(of: result), EHOSTDOWN)
        XCTAssertEqual(attempts, 1)
    }
}

/// The attempts one redial made.
private final class Attempts: Sendable {
    private let n = Mutex(0)
    func next() -> Int { n.withLock { $0 += 1; return $0 } }
    var count: Int { n.withLock { $0 } }
}
