/// A value of the TOML subset scenario files use.
public indirect enum TOMLValue: Equatable, Sendable {
    case string(String)
    case integer(Int)
    case float(Double)
    case bool(Bool)
    case array([TOMLValue])
    case table([String: TOMLValue])

    var typeName: String {
        switch self {
        case .string: return "string"
        case .integer: return "integer"
        case .float: return "float"
        case .bool: return "boolean"
        case .array: return "array"
        case .table: return "table"
        }
    }
}

/// A parse error with the line it was found on.
public struct TOMLError: Error, Equatable, CustomStringConvertible {
    public let line: Int
    public let message: String
    public var description: String { "line \(line): \(message)" }
}

/// Parses the subset of TOML that scenario files need: `key = value` pairs, `[table]`,
/// `[[array-of-tables]]`, comments, basic strings, integers (with `_`), floats, booleans and
/// inline arrays. Anything else is an error naming the line, never silently skipped.
public enum TOMLSubset {
    public static func parse(_ text: String) throws -> [String: TOMLValue] {
        var root: [String: TOMLValue] = [:]
        // Where `key = value` lines go: the root, a table, or the last table of an array.
        enum Target { case root, table(String), arrayItem(String) }
        var target = Target.root
        var definedTables = Set<String>()
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let n = index + 1
            let line = stripComment(String(raw)).trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("[[") {
                guard line.hasSuffix("]]") else { throw TOMLError(line: n, message: "expected ']]' to close the array of tables") }
                let name = String(line.dropFirst(2).dropLast(2)).trimmingCharacters(in: .whitespaces)
                try checkKey(name, line: n)
                var items: [TOMLValue]
                switch root[name] {
                case nil: items = []
                case let .array(a)? where a.allSatisfy({ if case .table = $0 { return true }; return false }): items = a
                default: throw TOMLError(line: n, message: "'\(name)' is already defined and is not an array of tables")
                }
                items.append(.table([:]))
                root[name] = .array(items)
                target = .arrayItem(name)
            } else if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw TOMLError(line: n, message: "expected ']' to close the table header") }
                let name = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                try checkKey(name, line: n)
                guard !definedTables.contains(name), root[name] == nil else { throw TOMLError(line: n, message: "table '\(name)' is defined twice") }
                definedTables.insert(name)
                root[name] = .table([:])
                target = .table(name)
            } else {
                guard let eq = line.firstIndex(of: "=") else { throw TOMLError(line: n, message: "expected 'key = value'") }
                let key = line[..<eq].trimmingCharacters(in: .whitespaces)
                try checkKey(key, line: n)
                var rest = Substring(line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces))
                let value = try parseValue(&rest, line: n)
                guard rest.trimmingCharacters(in: .whitespaces).isEmpty else {
                    throw TOMLError(line: n, message: "unexpected text after the value: '\(rest)'")
                }
                func insert(into table: inout [String: TOMLValue]) throws {
                    guard table[key] == nil else { throw TOMLError(line: n, message: "key '\(key)' is defined twice") }
                    table[key] = value
                }
                switch target {
                case .root:
                    try insert(into: &root)
                case let .table(name):
                    guard case var .table(t)? = root[name] else { continue }
                    try insert(into: &t)
                    root[name] = .table(t)
                case let .arrayItem(name):
                    guard case var .array(items)? = root[name], case var .table(t)? = items.last else { continue }
                    try insert(into: &t)
                    items[items.count - 1] = .table(t)
                    root[name] = .array(items)
                }
            }
        }
        return root
    }

    private static func checkKey(_ key: String, line: Int) throws {
        guard !key.isEmpty, key.unicodeScalars.allSatisfy({ ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "_" || $0 == "-" }) else {
            throw TOMLError(line: line, message: "'\(key)' is not a bare key (letters, digits, '_' and '-' only)")
        }
    }

    /// Drops a `#` comment that is not inside a string.
    private static func stripComment(_ s: String) -> String {
        var inString = false, escaped = false
        for (i, c) in s.enumerated() {
            if inString {
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { inString = false }
            } else if c == "\"" {
                inString = true
            } else if c == "#" {
                return String(s.prefix(i))
            }
        }
        return s
    }

    private static func parseValue(_ s: inout Substring, line: Int) throws -> TOMLValue {
        s = s.drop { $0 == " " || $0 == "\t" }
        guard let first = s.first else { throw TOMLError(line: line, message: "missing value") }
        if first == "\"" { return .string(try parseString(&s, line: line)) }
        if first == "[" {
            s.removeFirst()
            var items: [TOMLValue] = []
            while true {
                s = s.drop { $0 == " " || $0 == "\t" }
                if s.first == "]" { s.removeFirst(); return .array(items) }
                items.append(try parseValue(&s, line: line))
                s = s.drop { $0 == " " || $0 == "\t" }
                if s.first == "," { s.removeFirst(); continue }
                if s.first == "]" { s.removeFirst(); return .array(items) }
                throw TOMLError(line: line, message: "expected ',' or ']' in the array")
            }
        }
        let token = String(s.prefix { !($0 == "," || $0 == "]" || $0 == " " || $0 == "\t") })
        s = s.dropFirst(token.count)
        if token == "true" { return .bool(true) }
        if token == "false" { return .bool(false) }
        let digits = token.replacingOccurrences(of: "_", with: "")
        if let i = Int(digits) { return .integer(i) }
        if let d = Double(digits), d.isFinite, digits.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) { return .float(d) }
        throw TOMLError(line: line, message: "'\(token)' is not a value this file format accepts (string in \"quotes\", number, true/false, [array])")
    }

    private static func parseString(_ s: inout Substring, line: Int) throws -> String {
        s.removeFirst()
        var out = ""
        while let c = s.first {
            s.removeFirst()
            switch c {
            case "\"": return out
            case "\\":
                guard let e = s.first else { break }
                s.removeFirst()
                switch e {
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "\\": out.append("\\")
                case "\"": out.append("\"")
                default: throw TOMLError(line: line, message: "unsupported escape '\\\(e)' in a string")
                }
            default: out.append(c)
            }
        }
        throw TOMLError(line: line, message: "unterminated string")
    }
}

import Foundation
