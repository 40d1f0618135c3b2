import Foundation
import PeerLinkStore
import PeerLinkWire
import XCTest

/// A fresh directory for one test, removed when the test passes (kept, and named, when it
/// fails, for a look at the files).
func scratchDirectory(_ test: XCTestCase, _ label: String = "") -> String {
    let path = NSTemporaryDirectory() + "peerlink-store-\(label.isEmpty ? "" : label + "-")\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    test.addTeardownBlock { [weak test] in
        if (test?.testRun?.totalFailureCount ?? 0) == 0 { try? FileManager.default.removeItem(atPath: path) } else { print("kept \(path)") }
    }
    return path
}

func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

func readFile(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { Array($0) }
}

func names(_ dir: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
}

let alice = PeerID(digest: [UInt8](repeating: 0xA1, count: 20))
let bob = PeerID(digest: [UInt8](repeating: 0xB0, count: 20))
let carol = PeerID(digest: [UInt8](repeating: 0xC4, count: 20))

func at(_ ms: Int64) -> Timestamp { Timestamp(millisecondsSince1970: ms) }

/// An item ID made from one byte, easy to read in failures.
func itemID(_ n: UInt8) -> ItemID {
    ItemID(bytes: [UInt8](repeating: n, count: 16)) ?? ItemID.random()
}
