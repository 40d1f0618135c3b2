import XCTest
import PeerLink

/// `Node(upgraders:)` takes PeerLink's own set-up media; a type of the app's that only
/// conforms to the public `LinkUpgrader` is refused with a reason, not silently never used.
final class ForeignUpgraderTests: XCTestCase {
    private struct Homemade: LinkUpgrader { var medium: Medium { .memoryGroup } }

    func testAnUpgraderThatIsNotAPeerLinkMediumIsRefused() throws {
        XCTAssertThrowsError(try Node(identity: Identity(), displayName: "n", upgraders: [Homemade()])) { error in
            XCTAssertTrue("\(error)".contains("Homemade"), "the error names the type: \(error)")
        }
        let net = MemoryNetwork()
        XCTAssertNoThrow(try Node(identity: Identity(), displayName: "n", upgraders: [MemoryUpgrader(network: net, name: "g")]))
    }
}
