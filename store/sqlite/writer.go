package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// errClosed is returned by writes on a closed store.
var errClosed = errors.New("sqlite: store is closed")

// op is one queued write. fn runs inside the batch's transaction and must
// be safe to run again (the writer retries a batch op by op when one op
// fails half-way); it reports its results through variables it closes over,
// which the caller reads only when the op succeeded.
type op struct {
	ctx context.Context
	fn  func(*wtx) error
	// after, when set, runs on the writer once the op committed, before
	// the op is answered (so it is ordered like the commits).
	after func()
	err   error
	done  chan error
}

// cleanErr marks an op error raised before the op wrote anything, so the
// rest of the batch can still commit.
type cleanErr struct{ error }

func (e cleanErr) Unwrap() error { return e.error }

// clean marks err as raised before any write of the op.
func clean(err error) error { return cleanErr{err} }

// cleanIfConstraint marks err clean when it is a constraint violation: a
// failed statement is undone by SQLite on its own, so when it is the op's
// first write nothing of the op is left behind.
func cleanIfConstraint(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT {
		return clean(mapErr(err))
	}
	return err
}

// stmtID names a statement the writer prepares once.
type stmtID int

const (
	stUpdateRunCommit stmtID = iota
	stBumpRun
	stInsertEvent
	stInsertEvents2
	stUpsertStep
	stInsertBlob
	stInsertApproval
	stRunExists
	stCreateRun
	stRunByKey
	stReleaseLease
	stRenewLease
	nStmts
)

var stmtSQL = [nStmts]string{
	stUpdateRunCommit: `UPDATE runs SET version = version + 1, last_seq = max(last_seq, ?1), updated_at = ?2,
		status = coalesce(?3, status), error = coalesce(?4, error), usage = coalesce(?5, usage),
		settled_at = coalesce(?6, settled_at),
		lease_owner = iif(?9, NULL, lease_owner), lease_expires = iif(?9, NULL, lease_expires)
		WHERE id = ?7 AND version = ?8`,
	stBumpRun:       `UPDATE runs SET version = version + 1, last_seq = max(last_seq, ?1), updated_at = ?2 WHERE id = ?3 AND version = ?4`,
	stInsertEvent:   `INSERT INTO events (run_id, seq, version, kind, data) VALUES (?1, ?2, ?3, ?4, ?5)`,
	stInsertEvents2: `INSERT INTO events (run_id, seq, version, kind, data) VALUES (?1, ?2, ?3, ?4, ?5), (?1, ?6, ?3, ?7, ?8)`,
	stUpsertStep: `INSERT INTO steps (run_id, step_id, type, status, attempt, output, output_sha, output_blob,
		input, input_blob, idempotent, error, started_at, settled_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
		ON CONFLICT (run_id, step_id) DO UPDATE SET type = excluded.type, status = excluded.status,
		attempt = excluded.attempt, output = excluded.output, output_sha = excluded.output_sha,
		output_blob = excluded.output_blob, input = excluded.input, input_blob = excluded.input_blob,
		idempotent = excluded.idempotent, error = excluded.error, started_at = excluded.started_at,
		settled_at = excluded.settled_at`,
	stInsertBlob: `INSERT INTO blobs (sha256, data) VALUES (?1, ?2) ON CONFLICT (sha256) DO NOTHING`,
	stInsertApproval: `INSERT INTO approvals (run_id, id, step_id, kind, status, tool, args, message, output,
		comment, decided_by, created_at, decided_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`,
	stRunExists: `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)`,
	stCreateRun: `INSERT INTO runs (id, flow, flow_path, flow_hash, flow_text, input, meta,
		status, idempotency_key, session, lease_owner, lease_expires, created_at, updated_at, retention)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13, ?14) RETURNING ` + runCols,
	stRunByKey:     `SELECT ` + runCols + ` FROM runs WHERE idempotency_key = ?1`,
	stReleaseLease: `UPDATE runs SET lease_owner = NULL, lease_expires = NULL WHERE id = ?1 AND lease_owner = ?2`,
	stRenewLease:   `UPDATE runs SET lease_expires = ?1 WHERE id = ?2 AND lease_owner = ?3 AND lease_expires > ?4`,
}

// writer owns the write connection. Writes queue on ops; the writer applies
// everything queued in one transaction (group commit) and answers each op
// only after that transaction committed.
type writer struct {
	db     *sql.DB
	stmts  [nStmts]*sql.Stmt
	ops    chan *op
	quit   chan struct{}
	exited chan struct{}
	max    int
	once   sync.Once
	// batches and applied count transactions and ops, for tests.
	batches, applied atomic.Int64
}

// wtx is one batch's transaction, with the writer's statements bound to it
// on first use.
type wtx struct {
	ctx   context.Context
	tx    *sql.Tx
	w     *writer
	bound [nStmts]*sql.Stmt
}

func (x *wtx) stmt(id stmtID) *sql.Stmt {
	if x.bound[id] == nil {
		x.bound[id] = x.tx.StmtContext(x.ctx, x.w.stmts[id])
	}
	return x.bound[id]
}

// runExists reports whether the run is there (for telling ErrNotFound from
// ErrConflict after a conditional update matched nothing).
func (x *wtx) runExists(id string) (bool, error) {
	var ok bool
	err := x.stmt(stRunExists).QueryRowContext(x.ctx, id).Scan(&ok)
	return ok, err
}

func newWriter(ctx context.Context, db *sql.DB, max int) (*writer, error) {
	w := &writer{db: db, ops: make(chan *op, 1024), quit: make(chan struct{}), exited: make(chan struct{}), max: max}
	for i, q := range stmtSQL {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			w.closeStmts()
			return nil, err
		}
		w.stmts[i] = st
	}
	go w.loop()
	return w, nil
}

func (w *writer) closeStmts() {
	for _, st := range w.stmts {
		if st != nil {
			st.Close()
		}
	}
}

// do queues fn and waits for its batch to commit. Once queued, an op is
// waited for even if ctx ends (so the answer is always the truth); the
// writer skips it if ctx has ended by the time its batch starts.
func (w *writer) do(ctx context.Context, fn func(*wtx) error) error {
	return w.doThen(ctx, fn, nil)
}

// doThen is do with a hook that runs on the writer once fn committed.
func (w *writer) doThen(ctx context.Context, fn func(*wtx) error, after func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &op{ctx: ctx, fn: fn, after: after, done: make(chan error, 1)}
	select {
	case w.ops <- o:
	case <-w.quit:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-o.done:
		return err
	case <-w.exited:
		select {
		case err := <-o.done:
			return err
		default:
			return errClosed
		}
	}
}

// stop applies nothing more, fails what is still queued and waits for the
// writer goroutine to exit.
func (w *writer) stop() error {
	w.once.Do(func() { close(w.quit) })
	<-w.exited
	return nil
}

func (w *writer) loop() {
	defer close(w.exited)
	defer w.closeStmts()
	batch := make([]*op, 0, w.max)
	grouped := false
	for {
		select {
		case o := <-w.ops:
			batch = append(batch[:0], o)
		case <-w.quit:
			for {
				select {
				case o := <-w.ops:
					o.done <- errClosed
				default:
					return
				}
			}
		}
		if grouped {
			// Commits are arriving from several runs: let the ones just
			// answered queue their next op, so it joins this batch.
			runtime.Gosched()
		}
	fill:
		for len(batch) < w.max {
			select {
			case o := <-w.ops:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		if !w.apply(batch) {
			for _, o := range batch {
				w.apply([]*op{o})
			}
		}
		for _, o := range batch {
			if o.err == nil && o.after != nil {
				o.after()
			}
			o.done <- o.err
		}
		grouped = len(batch) > 1
		clear(batch)
	}
}

// apply runs ops in one transaction and sets each op's err. It returns
// false, having rolled back, when an op of a batch of several failed after
// writing: the caller then applies the ops one by one.
func (w *writer) apply(ops []*op) bool {
	ctx := context.Background()
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		for _, o := range ops {
			o.err = err
		}
		return true
	}
	x := &wtx{ctx: ctx, tx: tx, w: w}
	pending := 0
	for _, o := range ops {
		if err := o.ctx.Err(); err != nil {
			o.err = err
			continue
		}
		err := o.fn(x)
		var ce cleanErr
		switch {
		case err == nil:
			o.err = nil
			pending++
		case errors.As(err, &ce):
			o.err = ce.error
		case len(ops) > 1:
			tx.Rollback()
			return false
		default:
			o.err = err
			tx.Rollback()
			return true
		}
	}
	if pending == 0 {
		tx.Rollback()
		return true
	}
	w.batches.Add(1)
	w.applied.Add(int64(pending))
	if err := tx.Commit(); err != nil {
		for _, o := range ops {
			if o.err == nil {
				o.err = err
			}
		}
	}
	return true
}
