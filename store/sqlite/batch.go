package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/reinhq/rein/store"
)

// head is where a run's journal stands: its version and last event seq;
// approvals: the run may have approvals (false only for a run this writer
// created and gave none), so settling it must close the pending ones.
type head struct {
	version, seq int64
	approvals    bool
}

// wtx is one batch's transaction on the driver connection: the small
// type behind which the writer keeps its batching and caching. An entity's
// writes are plain statements on it (exec, query, queryRow), in a function
// of the entity's file; what the writer should learn once the batch
// commits goes through afterCommit, stageHead, forget and noteKey.
//
// Journal rows are queued (rows) and inserted together, in order, at the
// end of the batch: an op whose SQL reads the journal (a run version
// computed from it, or runs deleted) calls flush first, so that its SQL
// sees the rows of the ops before it.
type wtx struct {
	ctx context.Context
	c   *stmtCache
	w   *writer
	// op is the op whose fn runs (for afterCommit).
	op *op
	nv []driver.NamedValue // argument buffer
	// queued journal rows.
	rows rowBuf
	// heads the batch changed (deleted: forgotten), applied to the writer's
	// once the batch commits; inserted counts the transitions whose journal rows it wrote.
	heads   map[int64]head
	forgot  map[int64]bool
	evicted map[int64]bool
	// evictedKeys are the run IDs of evicted.
	evictedKeys []string
	keys        map[string]int64
	inserted    int
	indexed     bool
	// created counts the runs the batch inserted; flows the flow texts
	// it stored (by sha256).
	created int
	flows   []string
	// reset: the batch removed runs; from then on it trusts none of the
	// writer's keys, heads and flow texts, and the writer forgets them all
	// once the batch commits.
	reset bool
	// mark is journal_mark.runs as the batch moved it or read it (-1: as
	// the writer knows it, see liveMark).
	mark int64
}

// begin makes x the state of a new batch on c, keeping its buffers and
// maps (emptied), and returns it.
func (x *wtx) begin(ctx context.Context, c *stmtCache, w *writer) *wtx {
	clear(x.heads)
	clear(x.keys)
	clear(x.forgot)
	clear(x.evicted)
	clear(x.evictedKeys)
	clear(x.flows)
	clear(x.rows.args)
	*x = wtx{ctx: ctx, c: c, w: w, nv: w.nv, heads: x.heads, keys: x.keys, forgot: x.forgot, evicted: x.evicted,
		evictedKeys: x.evictedKeys[:0], flows: x.flows[:0], rows: rowBuf{args: x.rows.args[:0]}, mark: -1}
	return x
}

// afterCommit makes f run on the writer once the op's batch committed,
// before the op is answered; an op that fails, or runs again, drops it.
func (x *wtx) afterCommit(f func()) {
	if prev := x.op.after; prev != nil {
		x.op.after = func() { prev(); f() }
		return
	}
	x.op.after = f
}

// stageHead records a run's new head, for after the commit.
func (x *wtx) stageHead(rk int64, h head) {
	if x.heads == nil {
		x.heads = make(map[int64]head)
	}
	x.heads[rk] = h
	delete(x.forgot, rk)
}

// forget drops a run's head: an op moved its version in SQL, after the
// batch's queued rows were flushed, so the database is the truth.
func (x *wtx) forget(rk int64) {
	if x.forgot == nil {
		x.forgot = make(map[int64]bool)
	}
	x.forgot[rk] = true
	delete(x.heads, rk)
}

// evict drops a run's key and head from the writer once the batch
// committed: a finished or waiting run will not commit again soon, and the
// writer's memory stays with the runs in flight.
func (x *wtx) evict(id string, rk int64) {
	if x.evicted == nil {
		x.evicted = make(map[int64]bool)
	}
	x.evicted[rk] = true
	x.evictedKeys = append(x.evictedKeys, id)
}

// noteKey stages a run's key.
func (x *wtx) noteKey(id string, rk int64) {
	if x.keys == nil {
		x.keys = make(map[string]int64)
	}
	x.keys[id] = rk
}

// key returns a run's rk: ok false when there is no such run.
func (x *wtx) key(id string) (rk int64, ok bool, err error) {
	if rk, ok := x.keys[id]; ok {
		return rk, true, nil
	}
	if rk, ok := x.w.keys[id]; ok && !x.reset {
		return rk, true, nil
	}
	rk, ok, err = x.runKey(id)
	if ok {
		x.noteKey(id, rk)
	}
	return rk, ok, err
}

// head returns the rk and head of a run (clean store.ErrNotFound when there
// is none), from what the batch or the writer knows, or else the database.
func (x *wtx) head(id string) (int64, head, error) {
	rk, ok, err := x.key(id)
	if err != nil {
		return 0, head{}, err
	}
	if !ok {
		return 0, head{}, clean(store.ErrNotFound)
	}
	if h, ok := x.heads[rk]; ok {
		return rk, h, nil
	}
	if h, ok := x.w.heads[rk]; ok && !x.forgot[rk] && !x.reset {
		return rk, h, nil
	}
	var (
		rowVersion int64 // runs.version: leases and decisions bump it
		h          head
	)
	err = x.queryRow(stmtSQL[stHead], rk, id).Scan(&rowVersion, &h.version, &h.seq)
	if errors.Is(err, sql.ErrNoRows) {
		// the cached key is stale (the run was removed, its rk reused).
		delete(x.keys, id)
		delete(x.w.keys, id)
		rk, ok, err := x.runKey(id)
		if err != nil {
			return 0, head{}, err
		}
		if !ok {
			return 0, head{}, clean(store.ErrNotFound)
		}
		x.noteKey(id, rk)
		err = x.queryRow(stmtSQL[stHead], rk, id).Scan(&rowVersion, &h.version, &h.seq)
		if err != nil {
			return 0, head{}, err
		}
	} else if err != nil {
		return 0, head{}, err
	}
	h.version = max(h.version, rowVersion)
	h.approvals = true // not known: look when the run settles
	x.stageHead(rk, h)
	return rk, h, nil
}

// committed applies what the batch learnt to the writer.
func (x *wtx) committed() {
	w := x.w
	if x.reset {
		clear(w.keys)
		clear(w.heads)
		clear(w.flows)
	}
	if len(w.flows) >= maxKeys {
		clear(w.flows)
	}
	for _, sha := range x.flows {
		w.flows[sha] = true
	}
	if len(w.heads) >= maxKeys {
		clear(w.heads)
	}
	for rk := range x.forgot {
		delete(w.heads, rk)
	}
	for rk, h := range x.heads {
		w.heads[rk] = h
	}
	for rk := range x.evicted {
		delete(w.heads, rk)
	}
	for id, rk := range x.keys {
		w.noteKey(id, rk)
	}
	for _, id := range x.evictedKeys {
		delete(w.keys, id)
	}
	switch {
	case x.mark >= 0:
		w.mark = x.mark
	case x.reset:
		w.mark = -1
	}
	switch {
	case x.indexed:
		w.tail, w.runTail = 0, 0
	case w.tail >= 0:
		w.tail += x.inserted
		w.runTail += x.created
	}
}

// flush inserts the journal rows queued so far, in order.
func (x *wtx) flush() error {
	n := x.rows.transitions
	if err := x.rows.flush(x, &journalSQL, journalArgs); err != nil {
		return fmt.Errorf("append to the journal: %w", err)
	}
	x.inserted += n
	return nil
}

// indexJournal moves the tail of the journal into journal_index, and the
// tail of runs into run_flows, when either is long enough (or their length
// is unknown); it runs last in a batch.
func (x *wtx) indexJournal() error {
	if x.w.tail >= 0 && x.w.tail+x.inserted < indexEvery && x.w.runTail+x.created < indexEvery {
		return nil
	}
	if _, err := x.exec(stmtSQL[stIndexJournal]); err != nil {
		return fmt.Errorf("index the journal: %w", err)
	}
	if _, err := x.exec(stmtSQL[stIndexRuns]); err != nil {
		return fmt.Errorf("index runs by flow: %w", err)
	}
	if _, err := x.exec(stmtSQL[stIndexLive]); err != nil {
		return fmt.Errorf("index the runs in flight: %w", err)
	}
	if err := x.queryRow(stmtSQL[stMarkJournal]).Scan(&x.mark); err != nil {
		return fmt.Errorf("index the journal: %w", err)
	}
	x.indexed = true
	return nil
}

// checkOthers makes the writer forget what it knows of runs when another
// connection (another process) wrote the database since the writer's last
// commit: the data version moves with every commit, and the writer notes
// it after its own.
func (x *wtx) checkOthers() error {
	if x.w.memory {
		return nil
	}
	v, err := x.c.dataVersion()
	if err != nil {
		return err
	}
	if v != x.w.dataVersion {
		clear(x.w.keys)
		clear(x.w.heads)
		clear(x.w.flows)
		x.w.tail, x.w.runTail, x.w.mark = -1, -1, -1
		x.w.dataVersion = v
	}
	return nil
}

// runExists reports whether the run is there (for telling ErrNotFound from
// ErrConflict after a conditional update matched nothing).
func (x *wtx) runExists(id string) (bool, error) {
	var ok bool
	err := x.queryRow(stmtSQL[stRunExists], id).Scan(&ok)
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
	err = x.queryRow(stmtSQL[stRunKey], id).Scan(&rk)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return rk, err == nil, err
}
