@testable import PeerLink
import XCTest

/// Every write gets an answer, so the receiver's credit never waits on a silent writer.
final class IncomingFileWriterTests: XCTestCase {
    func answer(_ w: IncomingFileWriter, _ bytes: [UInt8]) -> Result<UInt64, IncomingFileWriter.Failure>? {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        w.write(bytes[...]) { box.set($0); done.signal() }
        guard done.wait(timeout: .now() + 10) == .success else { return nil }
        return box.get()
    }

    final class ResultBox: @unchecked Sendable {
        private let lock = NSLock()
        private var r: Result<UInt64, IncomingFileWriter.Failure>?
        func set(_ v: Result<UInt64, IncomingFileWriter.Failure>) { lock.withLock { r = v } }
        func get() -> Result<UInt64, IncomingFileWriter.Failure>? { lock.withLock { r } }
    }

    func testWritesAfterAFailureAreAnsweredWithIt() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-writer-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let w = try IncomingFileWriter(partPath: dir + "/f.part", size: 8)
        guard case .success(4)? = answer(w, [1, 2, 3, 4]) else { return XCTFail("first write") }
        w.close()
        guard case let .failure(f)? = answer(w, [5, 6, 7, 8]) else { return XCTFail("a write after close must be answered, not dropped") }
        guard case let .failed(held, _) = f else { return XCTFail("\(f)") }
        XCTAssertEqual(held, 4, "what the part file holds for a resume")
    }

    /// A resumed prefix that cannot be read back (the part file shrank) fails the next write.
    func testAPrefixThatCannotBeReadBackFailsTheNextWrite() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-writer-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let part = dir + "/f.part"
        try Data(repeating: 7, count: 4096).write(to: URL(fileURLWithPath: part))
        let w = try IncomingFileWriter(partPath: part, size: 8192)
        XCTAssertEqual(w.resumedFrom, 4096)
        XCTAssertEqual(truncate(part, 100), 0)
        w.hashHeldPrefix(progress: nil)
        guard case .failure? = answer(w, [1]) else { return XCTFail("the failed read-back must reach the next write") }
    }
}
