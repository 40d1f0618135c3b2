import Foundation
import PeerLinkStore
#if canImport(Glibc)
import Glibc
#endif

/// The torture's account of what each run did, appended to `journal.log` without fsync (a
/// SIGKILL keeps what was written; the page cache survives the process). The test reads it
/// to count the work redone after each restart. One event per line:
///
///     start RUN settled=N landed=N dropped=N     the run opened both ledgers
///     chunk RUN INDEX OFFSET LENGTH              the receiver wrote and fsynced these bytes
///     land RUN INDEX new|duplicate               a landing returned
///     deliver RUN INDEX                          the sender marked it delivered
///     done RUN                                   the workload finished
struct Journal {
    let fd: Int32
    let run: Int

    init(path: String, run: Int) throws {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileError(operation: "open", path: path, errno: errno) }
        self.run = run
    }

    func note(_ event: String, _ rest: String = "") {
        let line = rest.isEmpty ? "\(event) \(run)\n" : "\(event) \(run) \(rest)\n"
        try? DurableFile.writeAll(fd, Array(line.utf8), path: "journal.log")
    }
}
