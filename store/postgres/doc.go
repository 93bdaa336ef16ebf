// Package postgres is the PostgreSQL store.Store, on database/sql with the
// pgx driver (github.com/jackc/pgx/v5/stdlib). Several rein processes can share
// one database: workers divide the ready runs between them with leases
// taken by ClaimRuns (FOR UPDATE SKIP LOCKED), and every transition is
// checked against the run's version, so two processes never advance the
// same run at once.
//
// # DSN
//
// Open takes a libpq connection string, as a URL or as key=value pairs:
//
//	postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=disable
//	host=HOST port=PORT user=USER password=PASSWORD dbname=DATABASE
//
// Besides libpq's parameters it accepts pgxpool's pool settings
// (pool_max_conns, pool_max_conn_lifetime, pool_max_conn_idle_time), which
// size the database/sql pool (pool_min_conns has no equivalent there and
// is ignored), and any other parameter is
// sent to the server as a run-time setting (search_path=rein, for one).
// Options.Schema puts rein's tables in a schema of their own. Errors never
// repeat the password. Importing the package registers both forms (and
// postgresql://) with store.Open.
//
// # Schema and migrations
//
// The tables (rein_runs, rein_journal, rein_records, rein_approvals,
// rein_calls, rein_blobs, rein_blob_refs) are created by numbered migrations embedded in the binary
// and applied by Open in one transaction under an advisory lock; the
// applied versions are recorded in rein_schema_migrations. A binary that
// finds a schema newer than it knows refuses to open it and says to
// upgrade rein.
//
// # Journal, blobs and time
//
// Every transition is one row of rein_journal, keyed by (run_id, version),
// and its records — each event and each step record — rows of
// rein_records with typed columns (seq, kind, step_id, status, attempt,
// at, call_key) and JSON (an event's payload, a step's record, output,
// input and error), each with its own record version, so a record that
// does not decode (store.ErrDamaged), or that a newer rein wrote, is an
// error naming the run and sequence. The layout is SQLite's (schema 6,
// store/internal/records), and the views run_events, run_steps and
// run_calls have SQLite's names and columns: SQL reads the journal on
// both backends alike (docs/durability.md "Reading the store with SQL").
// The step projection is the last record of each step; the run's version
// and last sequence are its newest row of rein_journal. A Commit is one
// statement that inserts that row only when the run's newest row is at
// the transition's version, and the records with it; the primary key
// refuses a second row at the same version: of two writers racing from
// one version, exactly one wins. Leases, claims and decisions move the
// version by appending a row of rein_journal alone. Step outputs and
// inputs above Options.BlobThreshold (store.DefaultBlobThreshold) are
// stored once, by sha256, in rein_blobs; rein_blob_refs records which runs
// refer to them, for Prune. Schema 1 (a row per event, a row per step) is
// converted by migration 2, and schemas 2 to 4 (a transition's records as
// frames in its rein_journal row, store/internal/frames) by migration 5,
// when a newer binary first opens them.
//
// Every time the store decides with — lease expiry, claims, Prune's
// retention check — is the caller's (the params' Now, store.Store), so a
// lease is judged by the clock of the process that asks: processes on
// hosts whose clocks disagree see one another's leases expire early or
// late by the skew, which the lease's margin must cover (docs/durability.md).
// Times the store only records (created, updated, decided) are the
// caller's Now too, and the database clock (now()) when it is zero. Times
// are stored at PostgreSQL's microsecond precision.
//
// # Tests
//
// The tests and benchmarks need a real PostgreSQL, named by the one
// variable REIN_TEST_POSTGRES_DSN; each test works in a schema of its own,
// dropped afterwards. Without the variable they skip (and fail under
// CI=true). To start a throwaway server and run them:
//
//	eval "$(.ci/postgres)"
//	go test ./store/postgres/...
//	.ci/postgres stop "$REIN_TEST_POSTGRES_DIR"
package postgres
