package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/dropped"
	"github.com/reinhq/rein/store/internal/records"
)

var _ store.Store = (*Store)(nil)

// Options configures Open. A nil *Options means all defaults.
type Options struct {
	// Synchronous is PRAGMA synchronous: "NORMAL" (the default; in WAL mode
	// a commit survives a process crash, and a power loss may lose the
	// last commits but never corrupts the file) or "FULL" (a commit
	// survives a power loss too, at the cost of an fsync per batch).
	Synchronous string
	// BlobThreshold is the payload size above which step outputs and
	// inputs go to the blob table. Defaults to store.DefaultBlobThreshold.
	BlobThreshold int
	// BusyTimeout is how long a write waits for another process holding
	// the database lock before failing. Defaults to 5s.
	BusyTimeout time.Duration
	// MaxBatch caps how many queued writes go into one transaction.
	// Defaults to 256.
	MaxBatch int
	// ReadConns caps the connections of the read pool. Defaults to 4.
	// A ":memory:" database has one connection shared by reads and writes.
	ReadConns int
	// Checkpoint says who copies the write-ahead log back into the file.
	// Defaults to CheckpointAuto. CheckpointExternal is for a file that
	// another program checkpoints, such as litestream replicating it.
	Checkpoint Checkpoint
}

// Checkpoint is Options.Checkpoint.
type Checkpoint string

const (
	// CheckpointAuto: rein checkpoints the WAL itself (checkpoint.go) and
	// its writer keeps a read transaction between writes (pin.go).
	CheckpointAuto Checkpoint = "auto"
	// CheckpointExternal: rein runs no checkpoint of its own
	// (wal_autocheckpoint 0 on every connection, no background
	// checkpointer, no checkpoint after a vacuum) and its writer holds no
	// read transaction between writes, so another program — litestream —
	// checkpoints the WAL when it has copied it. The WAL grows until that
	// program checkpoints it.
	CheckpointExternal Checkpoint = "external"
)

func (o *Options) withDefaults() (Options, error) {
	var out Options
	if o != nil {
		out = *o
	}
	switch strings.ToUpper(out.Synchronous) {
	case "":
		out.Synchronous = "NORMAL"
	case "NORMAL", "FULL":
		out.Synchronous = strings.ToUpper(out.Synchronous)
	default:
		return out, fmt.Errorf("sqlite: Options.Synchronous %q: want NORMAL or FULL", o.Synchronous)
	}
	if out.BlobThreshold <= 0 {
		out.BlobThreshold = store.DefaultBlobThreshold
	}
	if out.BusyTimeout <= 0 {
		out.BusyTimeout = 5 * time.Second
	}
	if out.MaxBatch <= 0 {
		out.MaxBatch = 256
	}
	if out.ReadConns <= 0 {
		out.ReadConns = 4
	}
	switch Checkpoint(strings.ToLower(string(out.Checkpoint))) {
	case "", CheckpointAuto:
		out.Checkpoint = CheckpointAuto
	case CheckpointExternal:
		out.Checkpoint = CheckpointExternal
	default:
		return out, fmt.Errorf("sqlite: Options.Checkpoint %q: want auto or external", o.Checkpoint)
	}
	return out, nil
}

// Store is the SQLite backend of store.Store. It is safe for concurrent
// use. All writes go through one writer that groups concurrent calls into
// one transaction; reads use a separate pool of connections.
type Store struct {
	path   string
	opts   Options
	wdb    *sql.DB // the one write connection (and, for :memory:, reads too)
	rdb    *sql.DB
	reads  *stmts // rdb's queries, prepared once
	w      *writer
	ckpt   *checkpointer // nil for ":memory:"
	memory bool
	once   sync.Once
	err    error
	// dropped holds the runs whose lease a final Commit of this store
	// dropped, so the engine's ReleaseLease that follows costs nothing.
	dropped dropped.Set
}

// Open opens (creating if needed) the database at path and brings its
// schema up to date. A damaged database is refused with an error wrapping
// store.ErrDamaged, before SQLite reads it: a file truncated or
// overwritten while a write-ahead log lies beside it (SQLite would serve
// the pages the log holds and commit on top), or a log in which committed
// transactions follow a frame that fails its checksum (SQLite would drop
// them silently). Check looks deeper. path ":memory:" is a private in-memory database that
// lives until Close. The parent directory of a file is created. A file that
// is not a rein SQLite database, or whose schema is newer than this binary
// knows, is an error naming the file.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: database path %q: '?' and '#' are not allowed", path)
	}
	s := &Store{path: path, opts: o, memory: path == ":memory:"}
	if !s.memory {
		if err := s.checkFiles(); err != nil {
			return nil, err
		}
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("sqlite: create directory for %s: %w", path, err)
			}
		}
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous("+o.Synchronous+")")
	if !s.memory {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	// temp_store(MEMORY): the statement journal of the writer's multi-row
	// inserts stays in memory instead of a temporary file.
	wq := url.Values{"_txlock": {"immediate"}, "_pragma": {"temp_store(MEMORY)"}}
	external := o.Checkpoint == CheckpointExternal
	background := !s.memory && !external && backgroundCheckpoints(o.Synchronous)
	switch {
	case s.memory:
	case external:
		// every connection: any connection that commits may checkpoint.
		q.Add("_pragma", "wal_autocheckpoint(0)")
	case background:
		wq.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walRestartPages))
	default:
		wq.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", fullCheckpointPages))
	}
	for k, v := range q {
		wq[k] = append(wq[k], v...)
	}
	s.wdb, err = sql.Open("sqlite", path+"?"+wq.Encode())
	if err != nil {
		return nil, s.openErr(err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	if s.memory {
		s.rdb = s.wdb
	} else {
		rq := url.Values{}
		for k, v := range q {
			rq[k] = v
		}
		rq.Add("_pragma", "query_only(1)")
		s.rdb, err = sql.Open("sqlite", path+"?"+rq.Encode())
		if err != nil {
			s.wdb.Close()
			return nil, s.openErr(err)
		}
		s.rdb.SetMaxOpenConns(o.ReadConns)
		s.rdb.SetMaxIdleConns(o.ReadConns)
	}
	s.reads = newStmts(s.rdb)
	if err := s.migrate(ctx); err != nil {
		_ = s.closeDBs() // the error that stopped Open is the one to report
		return nil, err
	}
	s.w = newWriter(s.wdb, o.MaxBatch, s.memory)
	s.w.noPin = external
	if background {
		cdb, err := sql.Open("sqlite", path+"?"+q.Encode())
		if err != nil {
			_ = s.closeDBs() // the error that stopped Open is the one to report
			return nil, s.openErr(err)
		}
		cdb.SetMaxOpenConns(1)
		cdb.SetMaxIdleConns(1)
		cdb.SetConnMaxIdleTime(0)
		s.ckpt = newCheckpointer(cdb)
		s.w.kick = s.ckpt.kick
	}
	return s, nil
}

// Path is the database path the store was opened with.
func (s *Store) Path() string { return s.path }

// Close stops the writer — writes already queued are applied or fail with
// an error — and closes the database. It is safe to call more than once.
func (s *Store) Close() error {
	s.once.Do(func() {
		var errs []error
		if s.ckpt != nil {
			errs = append(errs, s.ckpt.stop())
		}
		s.err = errors.Join(append(errs, s.w.stop(), s.closeDBs())...)
	})
	return s.err
}

func (s *Store) closeDBs() error {
	var errs []error
	if s.reads != nil {
		errs = append(errs, s.reads.close())
	}
	if s.rdb != nil && s.rdb != s.wdb {
		errs = append(errs, s.rdb.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	return errors.Join(errs...)
}

// openErr says which file could not be opened, and why in plain words for
// the usual causes.
func (s *Store) openErr(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("sqlite: %s is not a SQLite database (or is encrypted or damaged): %w", s.path, err)
		case sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("%w: sqlite: %s is corrupt (truncated or damaged); restore it from a backup: %w", store.ErrDamaged, s.path, err)
		case sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("sqlite: cannot open %s (check the path and its permissions): %w", s.path, err)
		}
	}
	return fmt.Errorf("sqlite: open %s: %w", s.path, err)
}

// mapErr turns SQLite errors into the port's vocabulary: a uniqueness or
// primary-key violation is store.ErrConflict, a damaged page
// store.ErrDamaged.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			return fmt.Errorf("%w: %w", store.ErrConflict, err)
		}
		if c := se.Code() & 0xff; c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB {
			return fmt.Errorf("%w: %w", store.ErrDamaged, err)
		}
	}
	return err
}

// nanos and fromNanos store times as Unix nanoseconds; the zero time is NULL.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// nullText stores "" as NULL.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullBytes stores an empty slice as NULL.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// seen turns *err into an error wrapping store.ErrDamaged when it reports
// damage that a read or write met: SQLite's SQLITE_CORRUPT or SQLITE_NOTADB
// (a page that is not what its b-tree says, e.g. one zeroed on disk). Every
// exported method defers it, so no damage leaves the store as an ordinary
// failure; damage found in a journal record is wrapped where it is decoded
// (badRecord).
func (s *Store) seen(err *error) {
	e := *err
	if e == nil || errors.Is(e, store.ErrDamaged) {
		return
	}
	var se *sqlite.Error
	if !errors.As(e, &se) {
		return
	}
	if c := se.Code() & 0xff; c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB {
		*err = fmt.Errorf("%w: sqlite: %s: %w; restore it from a backup", store.ErrDamaged, s.path, e)
	}
}

// badRecord is the error for a journal record that does not decode: damage
// (store.ErrDamaged), unless a newer rein wrote it (*journal.VersionError
// says to upgrade rein).
func badRecord(err error) error { return records.Damaged("sqlite", err) }
