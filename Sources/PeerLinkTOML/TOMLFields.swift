/// A value in a TOML file that cannot be used: the key, its line when known, and what is
/// wrong or allowed.
public struct TOMLFieldError: Error, Equatable, CustomStringConvertible {
    public let key: String
    public let line: Int?
    public let message: String

    public init(key: String, line: Int?, message: String) {
        self.key = key; self.line = line; self.message = message
    }

    public var description: String { line.map { "line \($0): \(message)" } ?? message }
}

/// Typed access to one table of a TOML document that remembers which keys were read, so a
/// key nobody reads (a typo) is an error instead of being ignored (`noOtherKeys`). Every
/// error names the key's full path and, when it can be found, its line.
public struct TOMLFields {
    public let table: [String: TOMLValue]
    /// The table's path in the document ("" for the root, `link[2]` for an array item).
    public let path: String
    private let document: TOMLDocument?
    /// Said after an unknown key, e.g. where the keys are documented.
    private let unknownKeyHint: String
    private var used = Set<String>()

    public init(_ document: TOMLDocument, unknownKeyHint: String = "") {
        self.init(table: document.root, path: "", document: document, hint: unknownKeyHint)
    }

    public init(table: [String: TOMLValue], path: String = "", unknownKeyHint: String = "") {
        self.init(table: table, path: path, document: nil, hint: unknownKeyHint)
    }

    private init(table: [String: TOMLValue], path: String, document: TOMLDocument?, hint: String) {
        self.table = table; self.path = path; self.document = document; self.unknownKeyHint = hint
    }

    /// The key's full path, as messages name it.
    public func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// An error about `key`, with its line.
    public func error(_ key: String, _ message: String) -> TOMLFieldError {
        TOMLFieldError(key: name(key), line: document?.line(of: name(key)), message: message)
    }

    private func wrongType(_ key: String, _ want: String, _ got: TOMLValue) -> TOMLFieldError {
        error(key, "\(name(key)) must be a \(want), not a \(got.typeName)")
    }

    private mutating func value(_ key: String) -> TOMLValue? {
        used.insert(key)
        return table[key]
    }

    public mutating func string(_ key: String) throws -> String? {
        guard let v = value(key) else { return nil }
        guard case let .string(s) = v else { throw wrongType(key, "string", v) }
        return s
    }

    public mutating func requiredString(_ key: String) throws -> String {
        guard let s = try string(key) else { throw error(key, "\(name(key)) is missing") }
        return s
    }

    /// A string that must be one of `allowed`.
    public mutating func choice(_ key: String, _ allowed: [String]) throws -> String? {
        guard let s = try string(key) else { return nil }
        guard allowed.contains(s) else {
            throw error(key, "\(name(key)) = \"\(s)\" is not allowed; use one of: " + allowed.joined(separator: ", "))
        }
        return s
    }

    public mutating func int(_ key: String, min: Int, max: Int) throws -> Int? {
        guard let v = value(key) else { return nil }
        guard case let .integer(i) = v else { throw wrongType(key, "whole number", v) }
        guard (min...max).contains(i) else { throw error(key, "\(name(key)) = \(i) is outside \(min)…\(max)") }
        return i
    }

    public mutating func requiredInt(_ key: String, min: Int, max: Int) throws -> Int {
        guard let i = try int(key, min: min, max: max) else { throw error(key, "\(name(key)) is missing") }
        return i
    }

    public mutating func double(_ key: String, min: Double, max: Double) throws -> Double? {
        guard let v = value(key) else { return nil }
        let d: Double
        switch v {
        case let .float(f): d = f
        case let .integer(i): d = Double(i)
        default: throw wrongType(key, "number", v)
        }
        guard d >= min, d <= max else { throw error(key, "\(name(key)) = \(d) is outside \(min)…\(max)") }
        return d
    }

    public mutating func strings(_ key: String) throws -> [String]? {
        guard let v = value(key) else { return nil }
        guard case let .array(items) = v else { throw wrongType(key, "array of strings", v) }
        return try items.map { item in
            guard case let .string(s) = item else { throw wrongType(key, "array of strings", item) }
            return s
        }
    }

    public mutating func bool(_ key: String) throws -> Bool? {
        guard let v = value(key) else { return nil }
        guard case let .bool(b) = v else { throw wrongType(key, "boolean (true/false)", v) }
        return b
    }

    public mutating func table(_ key: String) throws -> TOMLFields? {
        guard let v = value(key) else { return nil }
        guard case let .table(t) = v else { throw wrongType(key, "table ([\(key)])", v) }
        return TOMLFields(table: t, path: name(key), document: document, hint: unknownKeyHint)
    }

    public mutating func tables(_ key: String) throws -> [TOMLFields] {
        guard let v = value(key) else { return [] }
        guard case let .array(items) = v else { throw wrongType(key, "array of tables ([[\(key)]])", v) }
        return try items.enumerated().map { i, item in
            guard case let .table(t) = item else { throw wrongType(key, "array of tables ([[\(key)]])", item) }
            return TOMLFields(table: t, path: "\(name(key))[\(i + 1)]", document: document, hint: unknownKeyHint)
        }
    }

    /// Fails on the first key (in order) that nothing read.
    public func noOtherKeys() throws {
        let unknown = Set(table.keys).subtracting(used).sorted()
        guard let first = unknown.first else { return }
        let hint = unknownKeyHint.isEmpty ? "" : " (\(unknownKeyHint))"
        throw error(first, "unknown key\(unknown.count > 1 ? "s" : "") " + unknown.map { name($0) }.joined(separator: ", ") + hint)
    }
}
