/// One step of a schema: the SQL that takes the file from `version - 1` to `version`.
public struct Migration: Sendable {
    /// The schema version the file is at after this step (1 for the first step).
    public let version: Int
    /// The statements of the step, run in one transaction.
    public let sql: String

    /// Makes the step that takes a file to `version` by running `sql`.
    public init(version: Int, sql: String) {
        self.version = version
        self.sql = sql
    }
}

extension Database {
    /// Brings the file to the last of `migrations` (numbered 1, 2, …, in order): each step
    /// missing from the file's `user_version` runs in its own transaction with the version
    /// bump, so a crash leaves the file at a whole step. A file newer than the last step is
    /// refused (`newerSchema`): this build would misread it.
    public func migrate(_ migrations: [Migration]) throws {
        let known = migrations.last?.version ?? 0
        let found = try userVersion()
        guard found <= known else {
            throw DatabaseError(kind: .newerSchema(found: found, known: known),
                                message: "schema version \(found) is newer than \(known)", path: path)
        }
        for step in migrations where step.version > found {
            try write { db in
                try db.execute(step.sql)
                try db.execute("PRAGMA user_version=\(step.version)")
            }
        }
    }
}
