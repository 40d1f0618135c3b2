internal import CSQLite

/// A failure of the SQLite database behind a ledger: SQLite's own message and result code,
/// the file it concerns and, when a statement failed, the statement.
public struct DatabaseError: Error, CustomStringConvertible, Sendable {
    /// What a caller can act on.
    public enum Kind: Sendable, Equatable {
        /// The file could not be opened or created (permissions, missing directory).
        case cannotOpen
        /// The file is not a SQLite database, or its pages are damaged.
        case notADatabase
        /// Another connection holds the lock longer than the busy timeout.
        case busy
        /// A constraint (unique key, check, foreign key) refused the change.
        case constraint
        /// The file was written by a newer PeerLink: its schema version is above what this
        /// build knows.
        case newerSchema(found: Int, known: Int)
        /// A value read from the file is not of the type or range the schema promises.
        case unexpectedValue
        /// Anything else SQLite reports (I/O error, full disk, misuse).
        case other
    }

    /// What went wrong, in terms a caller can act on.
    public let kind: Kind
    /// SQLite's extended result code (0 when the error is PeerLink's own).
    public let code: Int32
    /// SQLite's error message (or PeerLink's own, for `newerSchema` and `unexpectedValue`).
    public let message: String
    /// The database file concerned.
    public let path: String
    /// The statement that failed; nil when the error is not about one statement (opening, schema).
    public let sql: String?

    /// Makes an error; `code` is SQLite's extended result code, 0 for an error of PeerLink's own.
    public init(kind: Kind, code: Int32 = 0, message: String, path: String, sql: String? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.path = path
        self.sql = sql
    }

    /// The error SQLite reports for `code` on connection `db`.
    init(code: Int32, db: OpaquePointer?, path: String, sql: String? = nil) {
        let text = db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(code))
        self.init(kind: Kind(primary: code & 0xff), code: code, message: text, path: path, sql: sql)
    }

    public var description: String {
        var text = "database \(path): \(message) (SQLite code \(code))"
        if case let .newerSchema(found, known) = kind {
            text = "database \(path): schema version \(found) is newer than this build's \(known)"
        }
        if let sql { text += " in `\(sql.prefix(120))`" }
        return text
    }
}

extension DatabaseError.Kind {
    init(primary: Int32) {
        switch primary {
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY: self = .cannotOpen
        case SQLITE_NOTADB, SQLITE_CORRUPT: self = .notADatabase
        case SQLITE_BUSY, SQLITE_LOCKED: self = .busy
        case SQLITE_CONSTRAINT: self = .constraint
        default: self = .other
        }
    }
}
