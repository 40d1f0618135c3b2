import Foundation

/// Wakes every quiet peer channel of the process on one shared timer: idle peers then cost one
/// timer wake-up per beat in all, not one each (each wake-up of its own was a thread switch).
/// A waiter that has work before the beat is cancelled and returns at once. The timer runs only
/// while somebody waits.
final class QuietBeat: @unchecked Sendable {
    private static let registry = NSLock()
    nonisolated(unsafe) private static var beats: [UInt64: QuietBeat] = [:]

    /// The process's beat of `periodMillis`.
    static func every(_ periodMillis: UInt64) -> QuietBeat {
        registry.withLock {
            if let b = beats[periodMillis] { return b }
            let b = QuietBeat(periodMillis: periodMillis)
            beats[periodMillis] = b
            return b
        }
    }

    /// A wait from its start: `pending` until its continuation is stored, `cancelled` when
    /// cancelled before that; removed when resumed.
    private enum Slot { case pending, waiting(CheckedContinuation<Void, Never>), cancelled }

    let periodMillis: UInt64
    private let lock = NSLock()
    private var slots: [UInt64: Slot] = [:]  // under lock
    private var nextID: UInt64 = 0  // under lock
    private var timerRunning = false  // under lock

    init(periodMillis: UInt64) { self.periodMillis = max(1, periodMillis) }

    /// Returns at the next beat, or at once when the calling task is cancelled.
    func wait() async {
        let id: UInt64 = lock.withLock {
            nextID += 1
            slots[nextID] = .pending
            return nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let (resumeNow, startTimer): (Bool, Bool) = lock.withLock {
                    if case .cancelled? = slots.removeValue(forKey: id) { return (true, false) }
                    slots[id] = .waiting(c)
                    defer { timerRunning = true }
                    return (false, !timerRunning)
                }
                if resumeNow { c.resume() }
                if startTimer { Task.detached { [self] in await run() } }
            }
        } onCancel: {
            let waiting: CheckedContinuation<Void, Never>? = lock.withLock {
                switch slots[id] {
                case let .waiting(c)?:
                    slots[id] = nil
                    return c
                case .pending?:
                    slots[id] = .cancelled  // not stored yet: it returns as soon as it is
                    return nil
                case .cancelled?, nil:
                    return nil  // already resumed by the beat
                }
            }
            waiting?.resume()
        }
    }

    /// How many wait now (tests).
    var waiting: Int { lock.withLock { slots.values.filter { if case .waiting = $0 { return true }; return false }.count } }

    private func run() async {
        while true {
            try? await Runtime.sleep(nanoseconds: periodMillis * 1_000_000)
            let (due, stop): ([CheckedContinuation<Void, Never>], Bool) = lock.withLock {
                var ready: [CheckedContinuation<Void, Never>] = []
                for (id, slot) in slots {
                    if case let .waiting(c) = slot { ready.append(c); slots[id] = nil }
                }
                // Nobody waited this beat: stop; the next wait starts the timer again.
                if ready.isEmpty { timerRunning = false }
                return (ready, ready.isEmpty)
            }
            for c in due { c.resume() }
            if stop { return }
        }
    }
}
