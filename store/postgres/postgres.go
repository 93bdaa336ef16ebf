package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/dropped"
)

var _ store.Store = (*Store)(nil)

// DefaultLeaseTTL is the lease length used when a LeaseParams, ClaimParams
// or CreateRunParams asks for a lease with a TTL ≤ 0.
const DefaultLeaseTTL = 30 * time.Second

// Options configures Open. A nil *Options means all defaults.
type Options struct {
	// Schema is the PostgreSQL schema that holds rein's tables. Open creates
	// it when missing and sets it as the search_path of every connection.
	// Defaults to the DSN's search_path (normally "public").
	Schema string
	// BlobThreshold is the size in bytes above which a step's output or
	// input is stored once in the content-addressed blob table. Defaults to
	// store.DefaultBlobThreshold; a negative value keeps every payload inline.
	BlobThreshold int
	// MaxConns caps the connection pool. Defaults to the DSN's
	// pool_max_conns, else pgxpool's default (the larger of 4 and the
	// number of CPUs).
	MaxConns int32
	// ConnectTimeout bounds how long Open waits for its first connection.
	// Defaults to 10s.
	ConnectTimeout time.Duration
}

// Store is the PostgreSQL store.Store. It is safe for concurrent use; any
// number of Stores (in any number of processes) may share one database.
type Store struct {
	db            *sql.DB
	blobThreshold int
	// afterAttempt, set by tests, sees (and may replace) the outcome of
	// each Commit attempt, to simulate failures at exact points.
	afterAttempt func(attempt int, err error) error
	// dropped holds the runs whose lease a final Commit of this store
	// dropped, so the engine's ReleaseLease that follows costs nothing.
	dropped dropped.Set
}

// Open connects to the database named by dsn, applies the embedded
// migrations (under an advisory lock, so concurrent Opens are safe) and
// returns the Store. It fails with a message naming host:port — never the
// password — when the database cannot be reached, and refuses a schema
// written by a newer rein.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BlobThreshold == 0 {
		o.BlobThreshold = store.DefaultBlobThreshold
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	// the DSN is parsed as pgxpool parses it, so that its pool settings
	// (pool_max_conns, …) are not sent to the server as run-time
	// parameters; the pool is database/sql's, sized from them.
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, &dsnError{msg: "postgres store: invalid DSN: " + hideDSN(err.Error(), dsn), err: err}
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	if o.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{o.Schema}.Sanitize()
	}
	db := stdlib.OpenDB(*cfg.ConnConfig)
	db.SetMaxOpenConns(int(cfg.MaxConns))
	db.SetMaxIdleConns(int(cfg.MaxConns))
	db.SetConnMaxLifetime(cfg.MaxConnLifetime)
	db.SetConnMaxIdleTime(cfg.MaxConnIdleTime)
	cctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	if err := db.PingContext(cctx); err != nil {
		db.Close()
		if cctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %v: %w", o.ConnectTimeout, err)
		}
		return nil, connectErr(cfg, dsn, err)
	}
	if err := migrate(cctx, db, o.Schema, 0); err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db, blobThreshold: o.BlobThreshold}, nil
}

// Close closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() error { return s.db.Close() }

// dsnError carries a message cleaned of secrets while keeping the cause for
// errors.Is and errors.As.
type dsnError struct {
	msg string
	err error
}

func (e *dsnError) Error() string { return e.msg }
func (e *dsnError) Unwrap() error { return e.err }

func connectErr(cfg *pgxpool.Config, dsn string, err error) error {
	c := cfg.ConnConfig
	msg := fmt.Sprintf("postgres store: cannot connect to %s:%d (database %q, user %q): %s; check that the server is running and the DSN is right",
		c.Host, c.Port, c.Database, c.User, hideDSN(err.Error(), dsn, c.Password))
	return &dsnError{msg: msg, err: err}
}
