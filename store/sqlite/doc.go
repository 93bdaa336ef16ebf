// Package sqlite is the embedded default backend of store.Store, on
// modernc.org/sqlite (pure Go, no cgo). `rein run` uses ./.rein/rein.db
// unless --db or REIN_DB says otherwise; ":memory:" is a throwaway
// database that lives until Close.
//
// The database runs in WAL mode with a busy timeout and foreign keys on.
// Its schema is migrated on Open from numbered SQL files embedded in the
// binary (migrations/NNNN_name.sql, tracked in PRAGMA user_version), in
// one transaction; a database written by a newer rein is refused rather
// than guessed at.
//
// Writes go through one writer goroutine that owns the write connection.
// Concurrent Commits — typically of many runs in flight — are queued and
// applied in one transaction per batch (group commit): each transition's
// version check runs inside that transaction, a transition that fails is
// rejected alone while the others commit, and every Commit returns only
// after its batch's COMMIT succeeded. Reads use a separate connection pool
// and never wait for the writer (":memory:" shares its one connection).
//
// Two processes may open the same file: SQLite's lock, the busy timeout and
// the version check on every transition make the loser of a race get
// store.ErrConflict, never a corrupt journal.
//
// Durability follows Options.Synchronous: with NORMAL (the default) a
// committed transition survives a crash of the process; with FULL it also
// survives a power loss.
package sqlite
