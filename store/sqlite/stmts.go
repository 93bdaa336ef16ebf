package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxStmts bounds a stmts cache: the store's read queries are a small
// fixed set of texts (filters combine into a few dozen at most); a text
// beyond the bound runs unprepared.
const maxStmts = 64

// stmts runs the read pool's queries through statements prepared once per
// text: database/sql prepares a *sql.Stmt on each pooled connection the
// first time it runs there and keeps it, so a hot read (GetRun, Steps,
// Approvals) skips SQLite's parse and plan after its first call on a
// connection. It is safe for concurrent use; after close, queries run on
// the database directly (and fail as a closed database does).
type stmts struct {
	db     *sql.DB
	mu     sync.Mutex
	m      map[string]*sql.Stmt
	closed bool
}

func newStmts(db *sql.DB) *stmts { return &stmts{db: db, m: map[string]*sql.Stmt{}} }

// stmt returns the prepared statement of q, or nil when q is to run
// unprepared (the cache is full or closed, or q does not prepare: the
// query itself then reports why).
func (c *stmts) stmt(ctx context.Context, q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[q]; ok || c.closed || len(c.m) >= maxStmts {
		return st
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	c.m[q] = st
	return st
}

// QueryContext runs q with args.
func (c *stmts) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := c.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.db.QueryContext(ctx, q, args...)
}

// QueryRowContext runs q with args for one row.
func (c *stmts) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := c.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.db.QueryRowContext(ctx, q, args...)
}

// close closes the prepared statements; later queries run unprepared.
func (c *stmts) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for q, st := range c.m {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.m, q)
	}
	c.closed = true
	return first
}
