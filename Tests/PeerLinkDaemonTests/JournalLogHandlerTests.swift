import Logging
import Synchronization
import XCTest
@testable import PeerLinkDaemon

final class JournalLogHandlerTests: XCTestCase {
    private final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        func add(_ s: String) { lines.withLock { $0.append(s) } }
        var all: [String] { lines.withLock { $0 } }
    }

    func testJournalLinesCarryTheirPriorityAndMetadataOnOneLine() {
        let out = Lines()
        var log = Logger(label: "t") { JournalLogHandler(label: $0, level: .info, journal: true, write: out.add) }
        log[metadataKey: "peer"] = "ABC"
        log.debug("hidden")
        log.info("received", metadata: ["size": "12"])
        log.error("two\nlines")
        XCTAssertEqual(out.all, ["<6>received peer=ABC size=12", "<3>two ⏎ lines peer=ABC"])
    }

    func testOutsideTheJournalLinesStartWithTimeAndLevel() {
        let out = Lines()
        let log = Logger(label: "t") { JournalLogHandler(label: $0, level: .trace, journal: false, write: out.add) }
        log.warning("disk nearly full")
        let line = out.all.first ?? ""
        XCTAssertTrue(line.hasSuffix(" warning disk nearly full"), line)
        XCTAssertTrue(line.hasPrefix("20"), line)
    }
}
