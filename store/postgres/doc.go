// Package postgres is the PostgreSQL store.Store, on
// github.com/jackc/pgx/v5 and its pgxpool. Several rein processes can share
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
// Besides libpq's parameters it accepts pgxpool's (pool_max_conns,
// pool_min_conns, pool_max_conn_lifetime, …), and any other parameter is
// sent to the server as a run-time setting (search_path=rein, for one).
// Options.Schema puts rein's tables in a schema of their own. Errors never
// repeat the password. Importing the package registers both forms (and
// postgresql://) with store.Open.
//
// # Schema and migrations
//
// The tables (rein_runs, rein_journal, rein_approvals, rein_calls, rein_blobs,
// rein_blob_refs) are created by numbered migrations embedded in the binary
// and applied by Open in one transaction under an advisory lock; the
// applied versions are recorded in rein_schema_migrations. A binary that
// finds a schema newer than it knows refuses to open it and says to
// upgrade rein.
//
// # Journal, blobs and time
//
// Every transition is one row of rein_journal, keyed by (run_id, version):
// its events and step records as frames (the layout the SQLite store uses,
// store/internal/frames), each record with its own version, so a record
// that does not decode, or that a newer rein wrote, is an error naming the
// run and sequence. The step projection is the fold of a run's step
// records, the last record of a step winning; the run's version and last
// sequence are its newest row's. A Commit is one INSERT that applies only
// when the run's newest row is at the transition's version, and the
// primary key refuses a second row at the same version: of two writers
// racing from one version, exactly one wins. Leases, claims and decisions
// move the version by appending a row without frames. Step outputs and
// inputs above Options.BlobThreshold (store.DefaultBlobThreshold) are
// stored once, by sha256, in rein_blobs; rein_blob_refs records which runs
// refer to them, for Prune. Schema 1 (a row per event, a row per step) is
// converted by migration 2 when a newer binary first opens it.
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
