import Foundation
import XCTest

/// A wait in a test that did not end within its bound; the test has already failed with
/// `description` when this is thrown.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public let description: String
}

/// Factor applied to every bound of `within` (`PEERLINK_TEST_TIME_SCALE`, default 1), for a
/// machine much slower than the bounds were chosen for. Bounds stay finite whatever it is.
public let testTimeScale: Double = {
    guard let text = ProcessInfo.processInfo.environment["PEERLINK_TEST_TIME_SCALE"],
          let v = Double(text), v.isFinite, v >= 1 else { return 1 }
    return min(v, 20)
}()

/// Runs `body` and returns what it returns; if it has not finished after `seconds`, the test
/// fails with "`what`: not within N s" (plus `progress()`, when given: what had arrived so
/// far), `body` is cancelled and left behind, and `WaitTimedOut` is thrown.
///
/// The body runs in a task of its own and the deadline does not depend on it: a body stuck in
/// a call that ignores cancellation (a blocking read, a continuation never resumed) cannot
/// hold the test past the bound.
@discardableResult
public func within<T: Sendable>(_ seconds: Double, _ what: String, progress: (@Sendable () -> String)? = nil,
                                file: StaticString = #filePath, line: UInt = #line,
                                _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let bound = seconds * testTimeScale
    let outcome: Result<T, Error>? = await withCheckedContinuation { (c: CheckedContinuation<Result<T, Error>?, Never>) in
        let once = FirstOutcome(c)
        let work = Task {
            let r: Result<T, Error>
            do { r = .success(try await body()) } catch { r = .failure(error) }
            once.finish(r)
        }
        let timer = Task {
            try? await Task.sleep(nanoseconds: UInt64(bound * 1e9))
            if !Task.isCancelled { once.finish(nil) }
        }
        once.onFinish { work.cancel(); timer.cancel() }
    }
    switch outcome {
    case let .success(value)?:
        return value
    case let .failure(error)?:
        throw error
    case nil:
        var text = "\(what): not within \(formatSeconds(bound)) s"
        if let progress { text += " (\(progress()))" }
        XCTFail(text, file: file, line: line)
        throw WaitTimedOut(description: text)
    }
}

/// Whether `condition` holds within `seconds` (polled every `every` seconds; checked once more
/// at the deadline). Fails nothing itself: assert the result with a message that says what.
public func eventually(within seconds: Double, every: Double = 0.05, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds * testTimeScale)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: UInt64(every * 1e9))
    }
    return await condition()
}

func formatSeconds(_ s: Double) -> String {
    s == s.rounded() ? String(Int(s)) : String(format: "%.2f", s)
}

/// Resumes a continuation with the first outcome offered, once; then runs the finish action.
final class FirstOutcome<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T?, Never>?
    private var finished = false
    private var action: (@Sendable () -> Void)?

    init(_ c: CheckedContinuation<T?, Never>) { continuation = c }

    func finish(_ value: T?) {
        let (c, act): (CheckedContinuation<T?, Never>?, (@Sendable () -> Void)?) = lock.withLock {
            defer { continuation = nil; finished = true; action = nil }
            return (continuation, continuation == nil ? nil : action)
        }
        c?.resume(returning: value)
        act?()
    }

    /// Runs `act` when finished (at once if that already happened).
    func onFinish(_ act: @escaping @Sendable () -> Void) {
        let now: Bool = lock.withLock {
            if finished { return true }
            action = act
            return false
        }
        if now { act() }
    }
}
