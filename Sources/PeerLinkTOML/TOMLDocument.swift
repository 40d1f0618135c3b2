internal import TOMLKit

/// A TOML file that could not be read, with where and why.
public struct TOMLError: Error, Equatable, CustomStringConvertible {
    public let line: Int
    public let column: Int
    public let message: String

    public init(line: Int, column: Int = 0, message: String) {
        self.line = line; self.column = column; self.message = message
    }

    public var description: String { "line \(line)\(column > 0 ? ", column \(column)" : ""): \(message)" }
}

/// TOML 1.0 parsed by TOMLKit (toml++), turned into `TOMLValue`s, with the line of each key
/// kept for the messages that refuse a value (`line(of:)`).
public struct TOMLDocument: Sendable {
    public let root: [String: TOMLValue]
    private let lines: TOMLKeyLines

    public init(parsing text: String) throws {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let e as TOMLParseError {
            throw TOMLError(line: e.source.begin.line, column: e.source.begin.column, message: e.description)
        }
        lines = TOMLKeyLines(text)
        root = try Self.convert(table, path: "", lines: lines)
    }

    /// The line where the key at `path` (dotted, `table.key`; array-of-tables items as
    /// `name[2].key`) is set, when it can be found.
    public func line(of path: String) -> Int? { lines.line(of: path) }

    private static func convert(_ table: TOMLTable, path: String, lines: TOMLKeyLines) throws -> [String: TOMLValue] {
        var out: [String: TOMLValue] = [:]
        for key in table.keys {
            guard let v = table[key] else { continue }
            let here = path.isEmpty ? key : "\(path).\(key)"
            out[key] = try convert(v.tomlValue, path: here, lines: lines)
        }
        return out
    }

    private static func convert(_ v: TOMLKit.TOMLValue, path: String, lines: TOMLKeyLines) throws -> TOMLValue {
        switch v.type {
        case .string: return .string(v.string ?? "")
        case .int: return .integer(v.int ?? 0)
        case .double: return .float(v.double ?? 0)
        case .bool: return .bool(v.bool ?? false)
        case .table:
            guard let t = v.table else { return .table([:]) }
            return .table(try convert(t, path: path, lines: lines))
        case .array:
            guard let a = v.array else { return .array([]) }
            return .array(try a.enumerated().map { i, item in
                try convert(item.tomlValue, path: "\(path)[\(i + 1)]", lines: lines)
            })
        case .date, .time, .dateTime:
            throw TOMLError(line: lines.line(of: path) ?? 0, message: "\(path): dates and times are not used here; write a string or a number")
        }
    }
}
