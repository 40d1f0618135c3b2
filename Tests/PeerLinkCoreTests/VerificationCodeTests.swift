import PeerLinkCore
import PeerLinkWire
import XCTest

/// The code two owners compare (docs/PROTOCOL.md §17): the document's vector, computed by an
/// independent implementation (Python's hashlib), and the properties people rely on.
final class VerificationCodeTests: XCTestCase {
    private let a = try! PeerID(bytes: Array(0..<20))
    private let b = try! PeerID(bytes: Array(100..<120))

    func testTheProtocolDocumentsVector() throws {
        XCTAssertEqual(a.description, "aaaqeayeaudaocajbifqydiob4ibceqt")
        XCTAssertEqual(b.description, "mrswmz3infvgw3dnnzxxa4lson2hk5tx")
        XCTAssertEqual(VerificationCode(a, b).description, "79222 74834 27339 10688 38696 84847")
    }

    func testBothSidesSeeTheSameCode() {
        XCTAssertEqual(VerificationCode(a, b), VerificationCode(b, a))
    }

    func testAnotherKeyGivesAnotherCode() throws {
        var bytes = b.bytes
        bytes[19] ^= 1
        let c = try PeerID(bytes: bytes)
        XCTAssertNotEqual(VerificationCode(a, b), VerificationCode(a, c), "one bit of one key changed")
    }

    func testSixGroupsOfFiveDigitsWithLeadingZeros() {
        for seed in 0..<200 {
            let x = try! PeerID(bytes: (0..<20).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) })
            let code = VerificationCode(a, x)
            XCTAssertEqual(code.groups.count, 6)
            XCTAssertTrue(code.groups.allSatisfy { $0.count == 5 && $0.allSatisfy(\.isNumber) }, code.description)
        }
    }
}
