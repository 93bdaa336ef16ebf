package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// errClosed is returned by writes on a closed store.
var errClosed = errors.New("sqlite: store is closed")

// op is one queued write: fn, or a transition to apply (commit). fn runs
// inside the batch's transaction and must be safe to run again (the writer
// retries a batch op by op when one op fails half-way); it reports its
// results through variables it closes over, which the caller reads only
// when the op succeeded.
type op struct {
	ctx context.Context
	fn  func(*wtx) error
	// commit, instead of fn, is a transition to apply (commitData.stage).
	commit *commitData
	// after, set by the op through wtx.afterCommit, runs on the writer once
	// the op committed, before the op is answered (so it is ordered like the
	// commits).
	after func()
	err   error
	done  chan error
	// answered: done got the op's answer (set by the leader).
	answered bool
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

// writer owns the write connection. Writes queue on ops; the writer applies
// everything queued in one transaction (group commit) and answers each op
// only after that transaction committed.
//
// The writer remembers the head (version, last seq) of the runs it wrote,
// so a commit checks its version without reading: that memory is valid as
// long as no other connection wrote the database, which PRAGMA
// data_version tells at the start of every batch (another process on the
// same file makes the writer forget, and read heads again).
type writer struct {
	db *sql.DB
	// c holds the statements prepared on the driver connection (wconn.go);
	// memory: the database is ":memory:", no other connection can write it.
	c      *stmtCache
	conn   *sql.Conn // held for the writer's life (not for ":memory:")
	memory bool
	// noPin: never keep the read transaction between batches (pin.go).
	noPin bool
	max   int
	// mu guards the queue and the lead: busy while a caller leads (only
	// the leader touches the fields below batch and the statements).
	mu      sync.Mutex
	idle    sync.Cond
	queue   []*op
	busy    bool
	closed  bool
	once    sync.Once
	batch   []*op
	grouped bool
	nv      []driver.NamedValue // the leader's argument buffer
	// tx is the state of the batch being applied, reused (wtx.begin).
	tx wtx
	// The leader only. keys caches run IDs' rk; heads the heads of
	// runs by rk; flows the flow texts known stored (by sha256);
	// dataVersion the data_version they were valid for; tail how many
	// transitions journal_index lacks, and runTail how many runs run_flows
	// lacks, at most (-1: unknown).
	keys          map[string]int64
	heads         map[int64]head
	flows         map[string]bool
	dataVersion   int64
	tail, runTail int
	// mark is journal_mark.runs, up to which runs_live lists the runs in
	// flight (-1: unknown, read when needed).
	mark int64
	// kick, when set, asks for a background checkpoint (checkpoint.go);
	// sinceRows and sinceBatches count what was committed since the last
	// kick (or the last time the pin was let go, when there is no kick).
	kick                    func()
	sinceRows, sinceBatches int
	// pin keeps the leader's read transaction open between batches
	// (pin.go); pinIdle: let it go after so long without a batch. The
	// pin's idle timer (pinTimer, armed while pinTimed, pinSeen the batch
	// count at its last check) is guarded by mu.
	pin      driver.Rows
	pinIdle  time.Duration
	pinTimer *time.Timer
	pinTimed bool
	pinSeen  int64
	// batches and applied count transactions and ops, for tests.
	batches, applied atomic.Int64
}

func newWriter(db *sql.DB, max int, memory bool) *writer {
	w := &writer{db: db, memory: memory, keys: make(map[string]int64), heads: make(map[int64]head), flows: make(map[string]bool),
		tail: -1, runTail: -1, mark: -1, dataVersion: -1, max: max, pinIdle: pinIdle}
	w.idle.L = &w.mu
	return w
}

// withConn runs fn with the writer's driver connection and its statement
// cache (prepared again when database/sql replaced the connection).
func (w *writer) withConn(ctx context.Context, fn func(*stmtCache) error) error {
	conn := w.conn
	if conn == nil {
		var err error
		if conn, err = w.db.Conn(ctx); err != nil {
			return err
		}
		if w.memory {
			// ":memory:" has one connection, shared with the reads: the
			// writer takes it for a batch at a time.
			defer conn.Close()
		} else {
			w.conn = conn
		}
	}
	err := conn.Raw(func(dc any) error {
		d, ok := dc.(dconn)
		if !ok {
			return fmt.Errorf("sqlite: driver connection %T lacks PrepareContext", dc)
		}
		if w.c == nil || w.c.conn != d {
			// A new connection (the first, or database/sql replaced a bad
			// one): the old one's statements, and its pin, went with it.
			w.c = &stmtCache{conn: d, stmts: make(map[string]driver.Stmt)}
			w.dataVersion = -1
			w.pin = nil
		}
		return fn(w.c)
	})
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		if w.conn != nil {
			w.conn.Close()
			w.conn = nil
		}
		w.pin = nil
	}
	return err
}

// closeStmts closes the prepared statements and the writer's connection
// (at stop).
func (w *writer) closeStmts() {
	if w.c != nil {
		_ = w.withConn(context.Background(), func(c *stmtCache) error {
			w.unpin() // before its statement is closed
			c.close()
			return nil
		})
		w.c = nil
	}
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// opPool recycles ops with their done channel: send hands an op back once
// its answer is read, when nothing refers to it any more.
var opPool = sync.Pool{New: func() any { return &op{done: make(chan error, 1)} }}

func newOp(ctx context.Context) *op {
	o := opPool.Get().(*op)
	o.ctx = ctx
	return o
}

// write queues fn and waits for its batch to commit; fn is one op's
// statements in the batch's transaction (wtx). Once queued, an op is
// waited for even if ctx ends (so the answer is always the truth); the
// writer skips it if ctx has ended by the time its batch starts.
func (w *writer) write(ctx context.Context, fn func(*wtx) error) error {
	o := newOp(ctx)
	o.fn = fn
	return w.send(ctx, o)
}

// commit applies a transition, then after (which may be nil).
func (w *writer) commit(ctx context.Context, c *commitData, after func()) error {
	o := newOp(ctx)
	o.commit, o.after = c, after
	return w.send(ctx, o)
}

// errLead, sent on an op's done channel, makes its waiting caller the
// writer's leader.
var errLead = errors.New("sqlite: lead the writer")

// send queues o and waits for its answer. There is no writer goroutine:
// the caller that finds the writer idle leads it — applies the queued ops
// in batches on its own goroutine — and hands the lead to a waiting caller
// once its own op is answered. A lone caller thus commits without waking
// anyone; concurrent callers share batches.
func (w *writer) send(ctx context.Context, o *op) error {
	err := w.queueAndWait(ctx, o)
	// answered (or never queued): nothing refers to o any more.
	*o = op{done: o.done}
	opPool.Put(o)
	return err
}

func (w *writer) queueAndWait(ctx context.Context, o *op) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errClosed
	}
	w.queue = append(w.queue, o)
	if w.busy {
		w.mu.Unlock()
		if err := <-o.done; !errors.Is(err, errLead) {
			return err
		}
	} else {
		w.busy = true
		w.mu.Unlock()
	}
	w.lead(o)
	return <-o.done
}

// lead applies queued ops until mine is answered, then hands the lead to
// the first caller still waiting, or leaves the writer idle.
func (w *writer) lead(mine *op) {
	for {
		w.mu.Lock()
		switch {
		case w.closed:
			for _, o := range w.queue {
				o.done <- errClosed
			}
			clear(w.queue)
			w.queue = w.queue[:0]
			w.busy = false
			w.idle.Broadcast()
			w.mu.Unlock()
			return
		case len(w.queue) == 0:
			w.busy = false
			w.idle.Broadcast()
			w.mu.Unlock()
			return
		case mine.answered:
			w.queue[0].done <- errLead
			w.mu.Unlock()
			return
		}
		if w.grouped {
			// Commits are arriving from several runs: let the ones just
			// answered queue their next op, so it joins this batch.
			w.mu.Unlock()
			runtime.Gosched()
			w.mu.Lock()
		}
		n := min(len(w.queue), w.max)
		batch := append(w.batch[:0], w.queue[:n]...)
		rest := copy(w.queue, w.queue[n:])
		clear(w.queue[rest:])
		w.queue = w.queue[:rest]
		w.mu.Unlock()

		w.run(batch)
		for _, o := range batch {
			o.answered = true
			o.done <- o.err
		}
		w.grouped = len(batch) > 1
		clear(batch)
		w.batch = batch
	}
}

// run applies ops in one transaction — or, when one of them failed after
// writing, each in a transaction of its own — sets each op's err and runs
// the after hooks of those that committed.
func (w *writer) run(ops []*op) {
	if !w.apply(ops) {
		for _, o := range ops {
			w.apply([]*op{o})
		}
	}
	for _, o := range ops {
		if o.err == nil && o.after != nil {
			o.after()
		}
	}
}

// stop applies nothing more: it waits for the batch being applied, fails
// what is still queued and closes the statements.
func (w *writer) stop() error {
	w.mu.Lock()
	w.closed = true
	for w.busy {
		w.idle.Wait()
	}
	if w.pinTimer != nil {
		w.pinTimer.Stop()
	}
	for _, o := range w.queue {
		o.done <- errClosed
	}
	clear(w.queue)
	w.queue = w.queue[:0]
	w.mu.Unlock()
	w.once.Do(w.closeStmts)
	return nil
}

// apply runs ops in one transaction and sets each op's err. It returns
// false, having rolled back, when an op of a batch of several failed after
// writing: the caller then applies the ops one by one.
func (w *writer) apply(ops []*op) bool {
	ok := true
	err := w.withConn(context.Background(), func(c *stmtCache) error {
		ok = w.applyOn(c, ops)
		return nil
	})
	if err != nil {
		for _, o := range ops {
			o.err = err
		}
	}
	return ok
}

// txn ends a batch's transaction.
type txn struct{ x *wtx }

func (t txn) Commit() error {
	if _, err := t.x.exec("COMMIT"); err != nil {
		t.Rollback() // a COMMIT that failed may leave the transaction open
		return err
	}
	return nil
}

// Rollback ends the transaction, letting the pin go first (the next batch
// begins from a fresh read); after an error SQLite may have ended it
// already, and "no transaction is active" is nothing to report.
func (t txn) Rollback() {
	t.x.w.unpin()
	_, _ = t.x.exec("ROLLBACK")
}

func (w *writer) applyOn(c *stmtCache, ops []*op) bool {
	ctx := context.Background()
	fail := func(err error) bool {
		for _, o := range ops {
			o.err = err
		}
		return true
	}
	// The batch's state and scratch (argument buffer, staged heads and
	// keys, row buffer) are the writer's, reused: one batch at a time has
	// the lead.
	x := w.tx.begin(ctx, c, w)
	defer func() { w.nv = x.nv[:0] }()
	// BEGIN and COMMIT as statements prepared once: the driver's BeginTx
	// and Commit prepare them anew every time.
	if _, err := x.exec("BEGIN IMMEDIATE"); err != nil {
		if w.pin == nil {
			return fail(err)
		}
		// Pinned, BEGIN fails when another connection wrote since the pin's
		// snapshot (SQLITE_BUSY_SNAPSHOT) or holds the write lock (SQLITE_BUSY,
		// at once: SQLite waits for a lock only outside a read transaction).
		// Begin again from a fresh read, which waits as usual.
		w.unpin()
		if _, err := x.exec("BEGIN IMMEDIATE"); err != nil {
			return fail(err)
		}
	}
	w.pinOn(c)
	tx := txn{x}
	if err := x.checkOthers(); err != nil {
		tx.Rollback()
		return fail(err)
	}
	pending := 0
	for _, o := range ops {
		if err := o.ctx.Err(); err != nil {
			o.err = err
			continue
		}
		var err error
		if o.commit != nil {
			err = o.commit.stage(x)
		} else {
			o.after = nil // set again by this run of fn
			x.op = o
			err = o.fn(x)
			x.op = nil
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
	err := x.flush()
	if err == nil {
		err = x.indexJournal()
	}
	if err != nil {
		tx.Rollback()
		if len(ops) > 1 {
			return false
		}
		ops[0].err = err
		return true
	}
	w.batches.Add(1)
	w.applied.Add(int64(pending))
	// Every so many rows or transactions the pin is let go before COMMIT,
	// so that the checkpoints after it can copy the whole WAL (pin.go), and
	// the checkpointer is kicked.
	w.sinceRows += x.inserted
	w.sinceBatches++
	due := w.sinceRows >= kickEveryRows || w.sinceBatches >= kickEveryBatches
	if due {
		w.sinceRows, w.sinceBatches = 0, 0
		w.unpin()
	}
	if err := tx.Commit(); err != nil {
		for _, o := range ops {
			if o.err == nil {
				o.err = err
			}
		}
		return true
	}
	x.committed()
	if due && w.kick != nil {
		w.kick()
	}
	if !w.memory {
		// this commit moved the data version; note where it is now.
		if v, err := c.dataVersion(); err == nil {
			w.dataVersion = v
		} else {
			w.dataVersion = -1
		}
	}
	return true
}
