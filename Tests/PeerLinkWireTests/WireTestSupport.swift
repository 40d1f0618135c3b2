import XCTest
import PeerLinkWire

/// Asserts that `body` throws a `WireError` (and not some other error) and returns it.
@discardableResult
func assertWireError<T>(
    _ body: @autoclosure () throws -> T,
    _ message: @autoclosure () -> String = "",
    file: StaticString = #filePath, line: UInt = #line
) -> WireError? {
    do {
        let value = try body()
        XCTFail("expected a WireError, got \(value) \(message())", file: file, line: line)
        return nil
    } catch let e as WireError {
        return e
    } catch {
        XCTFail("expected a WireError, got \(type(of: error)): \(error) \(message())", file: file, line: line)
        return nil
    }
}

extension WireError {
    var isTruncated: Bool { if case .truncated = self { return true }; return false }
    var isInvalid: Bool { if case .invalid = self { return true }; return false }
    var isLimitExceeded: Bool { if case .limitExceeded = self { return true }; return false }
    var isUnknownType: Bool { if case .unknownType = self { return true }; return false }
    var isTrailingBytes: Bool { if case .trailingBytes = self { return true }; return false }
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
