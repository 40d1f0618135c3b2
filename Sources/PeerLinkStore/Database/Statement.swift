internal import CSQLite

/// A prepared statement of one `Database`. Bind with `bind(_:)`, step with `step()` or run
/// with `run()`; read the current row's columns through `Row`. Reset before each use by the
/// database's helpers, so a cached statement starts clean.
public final class Statement {
    let handle: OpaquePointer
    let sql: String
    unowned let database: Database

    init(handle: OpaquePointer, sql: String, database: Database) {
        self.handle = handle
        self.sql = sql
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    /// Clears earlier bindings and the cursor, then binds `values` to parameters 1…n.
    public func bind(_ values: [SQLBindable]) throws {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw DatabaseError(kind: .other, code: SQLITE_RANGE,
                                message: "statement takes \(expected) parameters, given \(values.count)",
                                path: database.path, sql: sql)
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value.sqlValue {
            case .null: rc = sqlite3_bind_null(handle, index)
            case let .integer(v): rc = sqlite3_bind_int64(handle, index, v)
            case let .real(v): rc = sqlite3_bind_double(handle, index, v)
            case let .text(v): rc = sqlite3_bind_text(handle, index, v, -1, csqlite_transient())
            case let .blob(v):
                rc = v.withUnsafeBytes { raw in
                    // A zero-length blob still binds as a blob, not NULL.
                    sqlite3_bind_blob64(handle, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                        sqlite3_uint64(raw.count), csqlite_transient())
                }
            }
            guard rc == SQLITE_OK else { throw database.error(rc, sql: sql) }
        }
    }

    /// Advances to the next row: true when a row is ready in `row`, false when done.
    public func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            sqlite3_reset(handle)
            throw database.error(rc, sql: sql)
        }
    }

    /// Runs the statement to its end (an INSERT, UPDATE, DELETE or a pragma).
    public func run() throws {
        while try step() {}
        sqlite3_reset(handle)
    }

    /// The current row (valid until the next `step`).
    public var row: Row { Row(statement: self) }
}

/// The current row of a statement, read by column index with the type the schema promises.
/// A value of another type is an `unexpectedValue` error naming the column, never a crash.
public struct Row {
    let statement: Statement

    /// Whether `column` (0-based) holds NULL.
    public func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(statement.handle, column) == SQLITE_NULL
    }

    /// The integer in `column` (0-based). Throws `unexpectedValue` when the column holds another
    /// storage class, NULL included.
    public func integer(_ column: Int32) throws -> Int64 {
        try expect(column, SQLITE_INTEGER, "an integer")
        return sqlite3_column_int64(statement.handle, column)
    }

    /// The integer in `column` (0-based), or nil when it is NULL. Throws `unexpectedValue` for
    /// another storage class.
    public func optionalInteger(_ column: Int32) throws -> Int64? {
        if isNull(column) { return nil }
        return try integer(column)
    }

    /// The number in `column` (0-based), a real or an integer converted to `Double`. Throws
    /// `unexpectedValue` for text, a blob or NULL.
    public func real(_ column: Int32) throws -> Double {
        let type = sqlite3_column_type(statement.handle, column)
        guard type == SQLITE_FLOAT || type == SQLITE_INTEGER else { throw unexpected(column, "a number") }
        return sqlite3_column_double(statement.handle, column)
    }

    /// The text in `column` (0-based), decoded as UTF-8 (invalid sequences repaired). Throws
    /// `unexpectedValue` when the column holds another storage class, NULL included.
    public func text(_ column: Int32) throws -> String {
        try expect(column, SQLITE_TEXT, "text")
        guard let bytes = sqlite3_column_text(statement.handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement.handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// The text in `column` (0-based), or nil when it is NULL. Throws `unexpectedValue` for
    /// another storage class.
    public func optionalText(_ column: Int32) throws -> String? {
        if isNull(column) { return nil }
        return try text(column)
    }

    /// The bytes in `column` (0-based); empty for an empty blob. Throws `unexpectedValue` when the
    /// column holds another storage class, NULL included.
    public func blob(_ column: Int32) throws -> [UInt8] {
        try expect(column, SQLITE_BLOB, "a blob")
        let count = Int(sqlite3_column_bytes(statement.handle, column))
        guard count > 0, let base = sqlite3_column_blob(statement.handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// The bytes in `column` (0-based), or nil when it is NULL. Throws `unexpectedValue` for
    /// another storage class.
    public func optionalBlob(_ column: Int32) throws -> [UInt8]? {
        if isNull(column) { return nil }
        return try blob(column)
    }

    private func expect(_ column: Int32, _ type: Int32, _ what: String) throws {
        guard sqlite3_column_type(statement.handle, column) == type else { throw unexpected(column, what) }
    }

    private func unexpected(_ column: Int32, _ what: String) -> DatabaseError {
        let name = sqlite3_column_name(statement.handle, column).map { String(cString: $0) } ?? "#\(column)"
        return DatabaseError(kind: .unexpectedValue, message: "column \(name) is not \(what)",
                             path: statement.database.path, sql: statement.sql)
    }
}
