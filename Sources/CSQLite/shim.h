// The system's SQLite (libsqlite3-dev) for PeerLinkStore's ledger. SQLITE_TRANSIENT is a cast
// macro Swift cannot import, so it is offered as a function.
#include <sqlite3.h>

static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }
