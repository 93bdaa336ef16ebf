package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reinhq/rein/store"
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
	// commit, instead of fn, is a transition to apply (commitData.stage).
	commit *commitData
	// runsOnly marks an fn that reads and writes no events or steps, so the
	// rows queued by the commits before it need not be inserted first.
	runsOnly bool
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
	stInsertBlob
	stInsertApproval
	stRunExists
	stRunKey
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
		WHERE rk = ?10 AND id = ?7 AND version = ?8`,
	stBumpRun:    `UPDATE runs SET version = version + 1, last_seq = max(last_seq, ?1), updated_at = ?2 WHERE rk = ?5 AND id = ?3 AND version = ?4`,
	stRunKey:     `SELECT rk FROM runs WHERE id = ?1`,
	stInsertBlob: `INSERT INTO blobs (sha256, data) VALUES (?1, ?2) ON CONFLICT (sha256) DO NOTHING`,
	stInsertApproval: `INSERT INTO approvals (run_id, id, step_id, kind, status, tool, args, message, output,
		comment, decided_by, created_at, decided_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`,
	stRunExists: `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)`,
	stCreateRun: `INSERT INTO runs (id, flow, flow_path, flow_hash, flow_text, input, meta,
		status, idempotency_key, session, lease_owner, lease_expires, created_at, updated_at, retention)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13, ?14)`,
	stRunByKey:     `SELECT ` + runCols + ` FROM runs WHERE idempotency_key = ?1`,
	stReleaseLease: `UPDATE runs SET lease_owner = NULL, lease_expires = NULL WHERE id = ?1 AND lease_owner = ?2`,
	stRenewLease:   `UPDATE runs SET lease_expires = ?1 WHERE id = ?2 AND lease_owner = ?3 AND lease_expires > ?4`,
}

// rowsKind names a table whose rows a batch inserts with multi-row
// statements: every commit of the batch queues its rows, and they go in
// (in the order queued) before the batch commits, or before an op that
// might look at them.
type rowsKind int

const (
	rowsEvents rowsKind = iota
	rowsSteps
	nRowsKinds
)

// maxRowsLog2: the multi-row statements insert 1, 2, 4, … 64 rows.
const maxRowsLog2 = 6

var rowsArgs = [nRowsKinds]int{rowsEvents: 3, rowsSteps: 14}

// rowsSQL returns the statement inserting n rows of kind.
func rowsSQL(kind rowsKind, n int) string {
	var b strings.Builder
	switch kind {
	case rowsEvents:
		b.WriteString(`INSERT INTO events (rk, seq, version, data) VALUES `)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "(?, ?, %d, ?)", store.JournalVersion)
		}
	case rowsSteps:
		b.WriteString(`INSERT INTO steps (rk, step_id, type, status, attempt, output, output_sha, output_blob,
		input, input_blob, idempotent, error, started_at, settled_at) VALUES `)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		}
		b.WriteString(` ON CONFLICT (rk, step_id) DO UPDATE SET type = excluded.type, status = excluded.status,
		attempt = excluded.attempt, output = excluded.output, output_sha = excluded.output_sha,
		output_blob = excluded.output_blob, input = excluded.input, input_blob = excluded.input_blob,
		idempotent = excluded.idempotent, error = excluded.error, started_at = excluded.started_at,
		settled_at = excluded.settled_at`)
	}
	return b.String()
}

// rowBuf holds the rows of one kind a batch has queued.
type rowBuf struct {
	args []any
	n    int
}

func (b *rowBuf) add(v ...any) {
	b.args = append(b.args, v...)
	b.n++
}

// writer owns the write connection. Writes queue on ops; the writer applies
// everything queued in one transaction (group commit) and answers each op
// only after that transaction committed.
type writer struct {
	db    *sql.DB
	stmts [nStmts]*sql.Stmt
	// rows[kind][k] inserts 1<<k rows of kind; prepared when first needed.
	rows   [nRowsKinds][maxRowsLog2 + 1]*sql.Stmt
	ops    chan *op
	quit   chan struct{}
	exited chan struct{}
	max    int
	once   sync.Once
	// keys caches run IDs' rk (writer goroutine only). An entry may be
	// stale — the run pruned, or replaced by another process — so every use
	// matches the run's id too, and looks the key up again on a miss.
	keys map[string]int64
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
	// queued rows, and the multi-row statements bound to tx.
	rows      [nRowsKinds]rowBuf
	boundRows [nRowsKinds][maxRowsLog2 + 1]*sql.Stmt
}

// flush inserts the rows queued so far, in order.
func (x *wtx) flush() error {
	for kind := range nRowsKinds {
		b := &x.rows[kind]
		per := rowsArgs[kind]
		off := 0
		for left := b.n; left > 0; {
			k := min(bits.Len(uint(left))-1, maxRowsLog2)
			st := x.boundRows[kind][k]
			if st == nil {
				st = x.tx.StmtContext(x.ctx, x.w.rows[kind][k])
				x.boundRows[kind][k] = st
			}
			n := 1 << k
			if _, err := st.ExecContext(x.ctx, b.args[off:off+n*per]...); err != nil {
				if kind == rowsEvents {
					return fmt.Errorf("append events: %w", mapErr(err))
				}
				return fmt.Errorf("upsert steps: %w", err)
			}
			off += n * per
			left -= n
		}
		clear(b.args)
		b.args, b.n = b.args[:0], 0
	}
	return nil
}

// prepareRows prepares the multi-row statements ops may need (before the
// batch's transaction: the one connection is then free).
func (w *writer) prepareRows(ctx context.Context, ops []*op) error {
	var need [nRowsKinds]int
	for _, o := range ops {
		if c := o.commit; c != nil {
			need[rowsEvents] += len(c.evs)
			need[rowsSteps] += len(c.steps)
		}
	}
	for kind, n := range need {
		for k := 0; k <= maxRowsLog2 && 1<<k <= n; k++ {
			if w.rows[kind][k] != nil {
				continue
			}
			st, err := w.db.PrepareContext(ctx, rowsSQL(rowsKind(kind), 1<<k))
			if err != nil {
				return err
			}
			w.rows[kind][k] = st
		}
	}
	return nil
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

// maxKeys bounds writer.keys; past it the cache starts over.
const maxKeys = 1 << 14

// noteKey caches the rk of a run (on the writer).
func (w *writer) noteKey(id string, rk int64) {
	if len(w.keys) >= maxKeys {
		clear(w.keys)
	}
	w.keys[id] = rk
}

// runKey looks up the rk of a run: ok false when there is no such run.
func (x *wtx) runKey(id string) (rk int64, ok bool, err error) {
	err = x.stmt(stRunKey).QueryRowContext(x.ctx, id).Scan(&rk)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return rk, err == nil, err
}

func newWriter(ctx context.Context, db *sql.DB, max int) (*writer, error) {
	w := &writer{db: db, keys: make(map[string]int64), ops: make(chan *op, 1024), quit: make(chan struct{}), exited: make(chan struct{}), max: max}
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
	for _, sts := range w.rows {
		for _, st := range sts {
			if st != nil {
				st.Close()
			}
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
	return w.send(ctx, &op{ctx: ctx, fn: fn, after: after})
}

// doRuns is doThen for an fn that touches no events or steps.
func (w *writer) doRuns(ctx context.Context, fn func(*wtx) error, after func()) error {
	return w.send(ctx, &op{ctx: ctx, fn: fn, after: after, runsOnly: true})
}

// doCommit applies a transition, then after.
func (w *writer) doCommit(ctx context.Context, c *commitData, after func()) error {
	return w.send(ctx, &op{ctx: ctx, commit: c, after: after})
}

func (w *writer) send(ctx context.Context, o *op) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o.done = make(chan error, 1)
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
	if err := w.prepareRows(ctx, ops); err != nil {
		for _, o := range ops {
			o.err = err
		}
		return true
	}
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
		var err error
		switch {
		case o.commit != nil:
			err = o.commit.stage(x)
		case o.runsOnly:
			err = o.fn(x)
		default:
			if err = x.flush(); err == nil {
				err = o.fn(x)
			}
		}
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
	if err := x.flush(); err != nil {
		tx.Rollback()
		if len(ops) > 1 {
			return false
		}
		ops[0].err = err
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
