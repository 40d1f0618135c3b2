import Foundation
import Logging

/// swift-log lines for a daemon, on stderr: under systemd (`JOURNAL_STREAM` set) each line
/// starts with its syslog priority (`<6>`), which journald turns into the entry's priority, and
/// carries no timestamp (the journal has one); elsewhere lines start with the UTC time and
/// the level. Metadata follows the message as `key=value`, sorted.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let journal: Bool
    private let write: @Sendable (String) -> Void

    public init(label: String, level: Logger.Level, journal: Bool = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil,
                write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }) {
        self.label = label; self.logLevel = level; self.journal = journal; self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// sd-daemon(3)'s priorities.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let fields = merged.keys.sorted().map { "\($0)=\(merged[$0].map { "\($0)" } ?? "")" }.joined(separator: " ")
        let text = "\(event.message)" + (fields.isEmpty ? "" : " " + fields)
        // One entry per line: a message with newlines would split into several.
        let line = text.replacingOccurrences(of: "\n", with: " ⏎ ")
        if journal {
            write("<\(Self.priority(event.level))>\(line)")
        } else {
            write("\(Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))) \(event.level) \(line)")
        }
    }
}
