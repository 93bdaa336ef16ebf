// Package sqlite is the embedded default backend of store.Store, on
// modernc.org/sqlite (pure Go, no cgo). `rein run` uses ./.rein/rein.db
// unless --db or REIN_DB says otherwise; ":memory:" is a throwaway
// database that lives until Close. Importing the package registers it with
// store.Open for file paths, ":memory:", "file:…" and "sqlite:…" DSNs
// (ParseDSN).
//
// The database runs in WAL mode with a busy timeout and foreign keys on.
// Its schema is migrated on Open from numbered SQL files embedded in the
// binary (migrations/NNNN_name.sql, tracked in PRAGMA user_version), in
// one transaction; a database written by a newer rein is refused rather
// than guessed at.
//
// Writes go through one writer that owns the write connection (used below
// database/sql, inside sql.Conn.Raw). It has no goroutine of its own: the
// caller that finds it idle leads it, and hands the lead to a waiting caller
// once its own write is answered. Concurrent Commits — typically of many
// runs in flight — are queued and applied in one transaction per batch
// (group commit): each transition's version check runs inside that
// transaction, a transition that fails is rejected alone while the others
// commit, and every Commit returns only after its batch's COMMIT succeeded. Reads use a separate connection pool
// and never wait for the writer (":memory:" shares its one connection).
//
// The journal is one table of rows, one per record — each event, and each
// step record a transition writes — in commit order, so concurrent runs'
// records share pages and a commit writes at the table's end. A row has
// typed columns (kind, step_id, status, attempt, at, call_key) and JSON
// (an event's JSON less those fields; a step record's JSON, which rides on
// its settled event's row when it can), so SQL reads it; the views run_events, run_steps and run_calls give a run's
// events, steps and call records by run ID (docs/durability.md "Reading
// the store with SQL"). The step projection is the fold of the step
// records; the run row changes only when its status, lease or decisions
// do. The index from run to its transitions' rows and the index of runs
// by flow are written in bulk every few hundred rows (readers scan the
// short tails not indexed yet); a pinned flow text is
// stored once per version of the flow, not per run. The version check needs no read: the writer remembers the
// head of each run it wrote, and forgets it whenever PRAGMA data_version
// says another connection wrote the file.
//
// Two processes may open the same file: SQLite's lock, the busy timeout and
// the version check on every transition make the loser of a race get
// store.ErrConflict, never a corrupt journal.
//
// Durability follows Options.Synchronous: with NORMAL (the default) a
// committed transition survives a crash of the process; with FULL it also
// survives a power loss. With NORMAL, WAL checkpoints run on a goroutine and
// connection of their own, kicked by the writer, so their page copies and
// fsyncs are not on the path of a commit; the writer's own autocheckpoint,
// set far (4,096 pages), only finishes what the background left and starts
// the WAL over. FULL keeps SQLite's autocheckpoint (see checkpoint.go).
//
// Between its transactions the writer keeps its read transaction open (see
// pin.go), which saves four of the six lock calls a WAL transaction makes;
// it lets it go whenever another connection wrote, before the checkpoints
// it kicks, and one to two seconds after its last write.
package sqlite
