internal import CSQLite

/// One SQLite connection, opened for durability: WAL journal, `synchronous=FULL` (a commit is
/// on disk when it returns), foreign keys enforced, and a busy timeout. Not thread-safe: its
/// owner serialises calls (the `Ledger` holds it under a mutex).
///
///     let db = try Database(path: "ledger.sqlite")
///     try db.migrate(LedgerSchema.migrations)
///     try db.write { db in try db.run("INSERT INTO t(x) VALUES (?)", 1) }
public final class Database {
    /// The database file's path, as given to `init(path:busyTimeout:)`.
    public let path: String
    let handle: OpaquePointer
    private var cache: [String: Statement] = [:]
    private var inTransaction = false

    /// Opens (creating if needed) the database at `path`. Fails with a `DatabaseError` naming
    /// the path when the file cannot be opened or is not a database.
    public init(path: String, busyTimeout: Duration = .seconds(5)) throws {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let error = DatabaseError(code: rc, db: db, path: path)
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        let ms = busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(db, Int32(clamping: ms))
        // The first statement reads the header: a file that is not a database fails here.
        let mode = try query("PRAGMA journal_mode=WAL") { try $0.text(0) }.first ?? ""
        guard mode.lowercased() == "wal" else {
            throw DatabaseError(kind: .other, message: "journal mode is '\(mode)', WAL refused", path: path)
        }
        try execute("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")
    }

    deinit {
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ code: Int32, sql: String?) -> DatabaseError {
        DatabaseError(code: code, db: handle, path: path, sql: sql)
    }

    /// Runs one or more statements that take no parameters (schema, pragmas).
    public func execute(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql: sql) }
    }

    /// A prepared statement for `sql`, cached by its text.
    public func prepare(_ sql: String) throws -> Statement {
        if let cached = cache[sql] { return cached }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, sql: sql) }
        let statement = Statement(handle: stmt, sql: sql, database: self)
        cache[sql] = statement
        return statement
    }

    /// Runs `sql` with `values` bound to its parameters.
    public func run(_ sql: String, _ values: SQLBindable...) throws {
        let s = try prepare(sql)
        try s.bind(values)
        try s.run()
    }

    /// Runs a query and maps each row with `map`.
    public func query<T>(_ sql: String, _ values: SQLBindable..., map: (Row) throws -> T) throws -> [T] {
        let s = try prepare(sql)
        try s.bind(values)
        defer { sqlite3_reset(s.handle) }
        var rows: [T] = []
        while try s.step() { rows.append(try map(s.row)) }
        return rows
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// Runs `body` in one write transaction (`BEGIN IMMEDIATE`): committed when it returns,
    /// rolled back when it throws. Nested calls join the outer transaction.
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        if inTransaction { return try body(self) }
        try execute("BEGIN IMMEDIATE")
        inTransaction = true
        defer { inTransaction = false }
        do {
            let result = try body(self)
            try execute("COMMIT")
            return result
        } catch {
            // A failed COMMIT may already have ended the transaction; the rollback is best-effort.
            if sqlite3_get_autocommit(handle) == 0 { _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
            throw error
        }
    }

    /// The schema version kept in the file's header (`PRAGMA user_version`).
    public func userVersion() throws -> Int {
        Int(try query("PRAGMA user_version") { try $0.integer(0) }.first ?? 0)
    }
}
