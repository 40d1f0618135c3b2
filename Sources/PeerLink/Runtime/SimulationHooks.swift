import Foundation

/// Points the concurrency runtime's global-executor hooks at a `Simulation` while it runs.
/// The hooks are process-wide variables of libswift_Concurrency: while they are set, every
/// job for the global executor, delayed or not, goes to the simulation.
enum SimulationHooks {
    private typealias Original = @convention(thin) (UnownedJob) -> Void
    private typealias Hook = @convention(thin) (UnownedJob, Original) -> Void
    private typealias DelayOriginal = @convention(thin) (UInt64, UnownedJob) -> Void
    private typealias DelayHook = @convention(thin) (UInt64, UnownedJob, DelayOriginal) -> Void
    private typealias DeadlineOriginal = @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob) -> Void
    private typealias DeadlineHook = @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob, DeadlineOriginal) -> Void

    private static func symbol<T>(_ name: String, as: T.Type) -> UnsafeMutablePointer<T?>? {
        guard let handle = dlopen(nil, RTLD_NOW), let p = dlsym(handle, name) else { return nil }
        return p.assumingMemoryBound(to: T?.self)
    }

    nonisolated(unsafe) private static let global = symbol("swift_task_enqueueGlobal_hook", as: Hook.self)
    nonisolated(unsafe) private static let main = symbol("swift_task_enqueueMainExecutor_hook", as: Hook.self)
    nonisolated(unsafe) private static let delay = symbol("swift_task_enqueueGlobalWithDelay_hook", as: DelayHook.self)
    nonisolated(unsafe) private static let deadline = symbol("swift_task_enqueueGlobalWithDeadline_hook", as: DeadlineHook.self)

    static func install(_ sim: Simulation) {
        // Only jobs queued by the simulation's own thread are its own. Jobs of other threads —
        // tasks that run outside it in the same process (an XCTest run's earlier tests), or a
        // job that arrives after it ended — go where they would have gone without it.
        global?.pointee = { job, original in
            if let sim = Runtime.simulation { sim.enqueue(job) } else { original(job) }
        }
        main?.pointee = { job, original in
            if let sim = Runtime.simulation { sim.enqueue(job) } else { original(job) }
        }
        delay?.pointee = { ns, job, original in
            if let sim = Runtime.simulation { sim.enqueue(job, afterNanoseconds: ns) } else { original(ns, job) }
        }
        deadline?.pointee = { sec, nsec, tsec, tnsec, clock, job, original in
            guard let sim = Runtime.simulation else { return original(sec, nsec, tsec, tnsec, clock, job) }
            // An absolute deadline on the real clock (0: continuous/boot time, 1: monotonic):
            // taken as the delay it was meant to be, to the millisecond (see Simulation).
            var ts = timespec()
            clock_gettime(clock == 0 ? CLOCK_BOOTTIME : CLOCK_MONOTONIC, &ts)
            let d = (sec - Int64(ts.tv_sec)) * 1_000_000_000 + (nsec - Int64(ts.tv_nsec))
            let ms = UInt64(max(0, d + 500_000)) / 1_000_000
            sim.enqueue(job, afterNanoseconds: ms * 1_000_000)
        }
    }

    static func uninstall() {
        global?.pointee = nil
        main?.pointee = nil
        delay?.pointee = nil
        deadline?.pointee = nil
    }
}
