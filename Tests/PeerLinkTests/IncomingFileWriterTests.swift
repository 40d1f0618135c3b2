@preconcurrency import Crypto
@testable import PeerLink
import XCTest

/// Every write gets an answer, so the receiver's credit never waits on a silent writer.
final class IncomingFileWriterTests: XCTestCase {
    func answer(_ w: IncomingFileWriter, _ bytes: [UInt8]) -> Result<UInt64, IncomingFileWriter.Failure>? {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        w.write([bytes[...]]) { box.set($0); done.signal() }
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

    /// Parts handed over together are written in order and hashed as one file.
    func testPartsWrittenTogetherMakeTheFileInOrder() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pl-writer-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let content = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ ($0 >> 9)) }
        let w = try IncomingFileWriter(partPath: dir + "/f.part", size: UInt64(content.count))
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        w.write([content[0..<1], content[1..<65_536], content[65_536..<65_536], content[65_536...]]) { box.set($0); done.signal() }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        guard case .success(300_000)? = box.get() else { return XCTFail("\(String(describing: box.get()))") }
        let path = PathBox()
        w.finish(sha256: Array(SHA256.hash(data: content)), directory: dir, name: "f.bin") { path.set($0); done.signal() }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        let kept = try XCTUnwrap(try path.get()?.get(), "the hash of the parts in order is the file's")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: kept)), Data(content))
    }

    final class PathBox: @unchecked Sendable {
        private let lock = NSLock()
        private var r: Result<String, ResourceFailure>?
        func set(_ v: Result<String, ResourceFailure>) { lock.withLock { r = v } }
        func get() -> Result<String, ResourceFailure>? { lock.withLock { r } }
    }
}
