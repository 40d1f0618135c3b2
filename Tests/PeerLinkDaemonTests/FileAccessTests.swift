import Foundation
import XCTest
@testable import PeerLinkDaemon

/// A file submitted through the API is copied only if it is the file whose access was checked.
final class FileAccessTests: XCTestCase {
    func testAFileSwappedAfterItsCheckIsNotCopied() throws {
        let dir = scratch(self)
        let path = dir + "/report.txt", secret = dir + "/secret.txt", out = dir + "/copy"
        try Data("mine".utf8).write(to: URL(fileURLWithPath: path))
        try Data("not yours".utf8).write(to: URL(fileURLWithPath: secret))
        let me = PeerCredentials(pid: getpid(), uid: 4242, gid: 4242)
        chmod(path, 0o644)
        let checked = try FileAccess.readableFile(path, by: me).get()
        // Between the check and the copy the path becomes a link to another file (the checked
        // file moved aside, so its inode is not reused).
        try FileManager.default.moveItem(atPath: path, toPath: dir + "/report.old")
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: secret)
        XCTAssertThrowsError(try FileAccess.copy(checked, to: out)) { e in
            XCTAssertEqual((e as? APIError)?.code, "not_readable", "a link in the checked path's place is not followed: \(e)")
        }
        // …or another file under the same name.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: secret, toPath: path)
        XCTAssertThrowsError(try FileAccess.copy(checked, to: out)) { e in
            XCTAssertEqual((e as? APIError)?.code, "file_changed", "\(e)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: out), "nothing copied")
        // The file checked, unchanged, is copied.
        let fresh = try FileAccess.readableFile(path, by: me).get()
        try FileAccess.copy(fresh, to: out)
        XCTAssertEqual(try String(contentsOfFile: out, encoding: .utf8), "not yours")
    }
}
