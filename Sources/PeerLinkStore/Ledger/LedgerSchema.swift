/// The ledger's tables, one migration per schema version (`PRAGMA user_version`).
enum LedgerSchema {
    static let migrations: [Migration] = [
        Migration(version: 1, sql: """
            CREATE TABLE outbound (
                id BLOB PRIMARY KEY CHECK (length(id) = 16),
                peer TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('file', 'message')),
                path TEXT,
                message BLOB,
                size INTEGER NOT NULL CHECK (size >= 0),
                priority INTEGER NOT NULL,
                created_ms INTEGER NOT NULL,
                expires_ms INTEGER NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'delivered', 'expired', 'failed')),
                reason TEXT,
                acked INTEGER NOT NULL DEFAULT 0,
                receipt TEXT,
                settled INTEGER NOT NULL DEFAULT 1,
                archived_path TEXT,
                CHECK ((kind = 'file') = (path IS NOT NULL))
            );
            CREATE INDEX outbound_pending ON outbound (peer, state, priority DESC, created_ms);
            CREATE INDEX outbound_unsettled ON outbound (settled) WHERE settled = 0;
            CREATE TABLE inbound (
                id BLOB PRIMARY KEY CHECK (length(id) = 16),
                peer TEXT NOT NULL,
                size INTEGER NOT NULL CHECK (size >= 0),
                digest BLOB NOT NULL CHECK (length(digest) = 32),
                received_ms INTEGER NOT NULL,
                keep_until_ms INTEGER NOT NULL,
                name TEXT,
                landed INTEGER NOT NULL
            );
            CREATE INDEX inbound_keep ON inbound (keep_until_ms);
            """),
    ]
}
