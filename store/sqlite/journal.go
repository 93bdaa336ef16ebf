package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/google/uuid"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/records"
	"github.com/reinhq/rein/trace"
)

// Commit appends t.Events and applies t.Run, t.Steps and t.Approvals in one
// transaction, on the condition that the run's version is still t.Version
// (store.ErrConflict otherwise; store.ErrNotFound for an unknown run). It
// returns once the transaction holding it committed; concurrent Commits of
// different runs share one transaction. Nothing of a failed Commit is
// applied and t.Version is left as it was. A Commit that settles the run
// (status succeeded, failed or cancelled) also drops the run's lease: a
// finished run has no writer to protect, and the owner's ReleaseLease that
// follows is then answered without a transaction.
//
// The transition is journal rows: one per event (a step record riding on
// its step's event) and one per step record left. The run row is written
// only when t.Run changes it, or when the transition has no journal row to
// carry the run's new version.
func (s *Store) Commit(ctx context.Context, t *store.Transition) (err error) {
	defer s.seen(&err)
	if t == nil || t.RunID == "" {
		return errors.New("sqlite: commit: empty run ID")
	}
	c, err := s.commitOp(t)
	if err != nil {
		return err
	}
	// the writer is done with c once commit returns (the driver copied
	// the rows' values when it bound them): its buffers serve the next
	// commit.
	defer c.recycle()
	var after func()
	if c.final {
		runID := t.RunID
		after = func() { s.dropped.Note(runID) }
	}
	if err := s.w.commit(ctx, c, after); err != nil {
		return fmt.Errorf("sqlite: commit run %s: %w", t.RunID, err)
	}
	t.Version++
	return nil
}

// commitData is a transition encoded for the writer (on the caller's
// goroutine): the writer checks its version and queues its journal rows
// for the batch's multi-row insert.
type commitData struct {
	runID                          string
	version, maxSeq, now           int64
	update, final                  bool
	status, errJSON, usage, settle any
	// buf holds the records' JSON one after the other: the events', then
	// the step records'. evs and steps are their other values; a step's
	// payloads alias the transition's, which are the caller's again once
	// Commit returns.
	buf         []byte
	evs         []eventRow
	steps       []stepRow
	blobs       [][2]any // sha256, data
	approvals   []*store.Approval
	create      *store.CreateRunParams
	flowSHA     string // of create's flow text
	closeReason string // comment on the approvals a final commit closes
}

// eventRow is an event's values but its payload, which ends at end in
// commitData.buf; step is 1 + the index in commitData.steps of the step
// record its row carries (0: none).
type eventRow struct {
	seq                                        int64
	kind, stepID, status, attempt, at, callKey any
	end, step                                  int
}

// stepRow is a step record's values but its JSON, which ends at end in
// commitData.buf; row is the index in commitData.evs of the event whose
// row carries it (-1: a row of its own).
type stepRow struct {
	stepID, status, attempt any
	output, input, errJSON  []byte
	end, row                int
}

// placeSteps puts each of t's step records on the row of t's last event
// of the same step, status and attempt, in order: a record whose event
// comes before the previous record's, or that has none, and the records
// after it, get rows of their own after the events (so the rows keep the
// records' order). A settled step's record thus rides on its step_settled
// event, one row fewer to write.
func (c *commitData) placeSteps(t *store.Transition) {
	for i := range c.evs {
		c.evs[i].step = 0
	}
	after := -1
	for i, st := range t.Steps {
		j := len(t.Events) - 1
		for ; j > after; j-- {
			e := t.Events[j]
			if e.StepID == st.StepID && e.Status == string(st.Status) && e.Attempt == st.Attempt && c.evs[j].step == 0 {
				break
			}
		}
		if j <= after {
			return
		}
		c.evs[j].step, c.steps[i].row, after = i+1, j, j
	}
}

var commitPool = sync.Pool{New: func() any { return new(commitData) }}

// recycle returns c, with its buffers, to the pool.
func (c *commitData) recycle() {
	buf, evs, steps := c.buf[:0], c.evs[:0], c.steps[:0]
	clear(c.blobs)
	clear(steps[:cap(steps)])
	blobs := c.blobs[:0]
	*c = commitData{buf: buf, evs: evs, steps: steps, blobs: blobs}
	commitPool.Put(c)
}

// commitOp encodes t (outside the writer, on the caller's goroutine).
func (s *Store) commitOp(t *store.Transition) (*commitData, error) {
	c := commitPool.Get().(*commitData)
	c.runID, c.version, c.now, c.create = t.RunID, t.Version, nowOr(t.Now).UnixNano(), t.Create
	if p := t.Create; p != nil {
		switch {
		case p.Owner != "" && t.Now.IsZero():
			return nil, fmt.Errorf("sqlite: commit run %s: it creates the run leased to %s: %w", t.RunID, p.Owner, store.ErrNoTime)
		case p.ID != t.RunID:
			return nil, fmt.Errorf("sqlite: commit run %s: it creates run %q: want the same ID", t.RunID, p.ID)
		case t.Version != 0:
			return nil, fmt.Errorf("sqlite: commit run %s: a creating commit is at version 0, not %d", t.RunID, t.Version)
		case p.IdempotencyKey != "":
			return nil, fmt.Errorf("sqlite: commit run %s: a creating commit takes no idempotency key (use CreateRun)", t.RunID)
		}
		c.flowSHA = flowSHA(p.FlowText)
	}
	for _, e := range t.Events {
		if e.Seq <= c.maxSeq {
			return nil, fmt.Errorf("sqlite: commit run %s: event seq %d does not follow seq %d", t.RunID, e.Seq, c.maxSeq)
		}
		at, timed := eventNanos(e.Time)
		c.buf = records.AppendPayload(c.buf, e, timed)
		r := eventRow{seq: e.Seq, kind: string(e.Kind), stepID: nullText(e.StepID), status: nullText(e.Status),
			attempt: nullInt(e.Attempt), at: at, end: len(c.buf)}
		if e.Call != nil {
			r.callKey = e.Call.Key
		}
		c.evs = append(c.evs, r)
		c.maxSeq = e.Seq
	}
	for _, st := range t.Steps {
		var e journal.EncodedStep
		e, c.buf = journal.EncodeStep(st, s.opts.BlobThreshold, c.buf)
		if e.OutputBlob != "" {
			c.blobs = append(c.blobs, [2]any{e.OutputBlob, e.OutputData})
		}
		if e.InputBlob != "" {
			c.blobs = append(c.blobs, [2]any{e.InputBlob, e.InputData})
		}
		c.steps = append(c.steps, stepRow{stepID: st.StepID, status: string(st.Status), attempt: int64(st.Attempt),
			output: e.Output, input: e.Input, errJSON: e.Error, end: len(c.buf), row: -1})
	}
	c.placeSteps(t)
	if len(t.Approvals) > 0 {
		now := time.Unix(0, c.now)
		c.approvals = make([]*store.Approval, len(t.Approvals))
		for i, a := range t.Approvals {
			ac := *a
			ac.RunID = t.RunID
			if ac.ID == "" {
				ac.ID = uuid.NewString()
			}
			ac.Status = store.ApprovalPending
			if ac.CreatedAt.IsZero() {
				ac.CreatedAt = now
			}
			c.approvals[i] = &ac
		}
	}
	if u := t.Run; u != nil {
		c.update = true
		c.status, c.errJSON, c.usage, c.settle = nullText(string(u.Status)), nullBytes(u.Error), nullBytes(u.Usage), nanos(u.SettledAt)
		c.final = (&store.Run{Status: u.Status}).Finished()
		if c.final {
			c.closeReason = u.CloseReason()
			if u.SettledAt.IsZero() {
				// settled at the transition's time (store.Transition.Now).
				c.settle = c.now
			}
		}
	}
	if len(c.evs) == 0 && len(c.steps) == 0 {
		// no journal row carries the run's new version: the run row does.
		c.update = true
	}
	return c, nil
}

// stage checks c's version and applies the writes that cannot wait (run
// row, blobs, approvals), then queues its events and steps rows on x for
// the batch's multi-row statements (x.flush). An error before any write is clean.
func (c *commitData) stage(x *wtx) error {
	if p := c.create; p != nil {
		status := p.Status
		if status == "" {
			status = trace.RunPending
		}
		if _, err := insertRun(x, p, status, c.flowSHA, time.Unix(0, c.now)); err != nil {
			return err
		}
		// the run row is written: a failure from here on is not clean,
		// so the batch rolls back and the run is not left behind.
		err := c.apply(x)
		var ce cleanErr
		if errors.As(err, &ce) {
			return ce.error
		}
		return err
	}
	return c.apply(x)
}

// apply is stage after the run exists.
func (c *commitData) apply(x *wtx) error {
	rk, h, err := x.head(c.runID)
	if err != nil {
		return err
	}
	if h.version != c.version {
		return clean(fmt.Errorf("version %d is stale (the run is at %d): %w", c.version, h.version, store.ErrConflict))
	}
	next := head{version: c.version + 1, seq: max(h.seq, c.maxSeq), approvals: h.approvals || len(c.approvals) > 0}
	if c.maxSeq > 0 && c.maxSeq <= h.seq {
		return clean(fmt.Errorf("event seq %d is not after the run's last seq %d: %w", c.maxSeq, h.seq, store.ErrConflict))
	}
	if c.update {
		if err := updateRun(x, rk, c, next.version); err != nil {
			return err
		}
	}
	for _, b := range c.blobs {
		if err := insertBlob(x, rk, b[0], b[1]); err != nil {
			return err
		}
	}
	for _, a := range c.approvals {
		if err := insertApproval(x, a); err != nil {
			return err
		}
	}
	if c.final && next.approvals {
		// a finished run waits for nobody (store.Store.Commit).
		if err := closeApprovals(x, c.runID, c.closeReason, c.now); err != nil {
			return err
		}
	}
	appendJournal(x, rk, next, c)
	x.stageHead(rk, next)
	if c.final || c.status == string(trace.RunWaiting) {
		x.evict(c.runID, rk)
	}
	return nil
}

// appendJournal queues the transition's journal rows — its events, some
// carrying a step record (placeSteps), then its other step records — for
// the batch's multi-row insert.
func appendJournal(x *wtx, rk int64, h head, c *commitData) {
	// values shared by the rows, boxed once; n goes on the first row.
	rows := len(c.evs)
	for i := range c.steps {
		if c.steps[i].row < 0 {
			rows++
		}
	}
	if rows > 0 {
		x.rows.transitions++
	}
	rkv, version, now, n := any(rk), any(h.version), any(c.now), any(int64(rows))
	// the events' payloads come first in c.buf, then the step records'.
	start, recStart := 0, 0
	if k := len(c.evs); k > 0 {
		recStart = c.evs[k-1].end
	}
	recOf := func(i int) (st *stepRow, rec any) {
		st, from := &c.steps[i], recStart
		if i > 0 {
			from = c.steps[i-1].end
		}
		return st, text(c.buf[from:st.end])
	}
	for i := range c.evs {
		e := &c.evs[i]
		x.rows.args = append(x.rows.args, rkv, e.seq, e.kind, e.stepID, e.status, e.attempt, e.at, e.callKey, text(c.buf[start:e.end]))
		if e.step > 0 {
			st, rec := recOf(e.step - 1)
			x.rows.args = append(x.rows.args, rec, text(st.output), text(st.input), text(st.errJSON), version, now, n)
		} else {
			x.rows.args = append(x.rows.args, nil, nil, nil, nil, version, now, n)
		}
		x.rows.n++
		start, n = e.end, nil
	}
	seq := any(h.seq)
	for i := range c.steps {
		st, rec := recOf(i)
		if st.row >= 0 {
			continue
		}
		x.rows.args = append(x.rows.args, rkv, seq, nil, st.stepID, st.status, st.attempt, nil, nil, nil,
			rec, text(st.output), text(st.input), text(st.errJSON), version, now, n)
		x.rows.n++
		n = nil
	}
}

// text is b as a TEXT value (NULL when empty), so that SQL reads it as
// JSON text. It aliases b: the driver copies the value when it binds it,
// and b must not change before the statement ran.
func text(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return unsafe.String(&b[0], len(b))
}

// nullInt is n, NULL for 0 (an event field left out).
func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return int64(n)
}

// eventNanos is an event's time in Unix ns for its at column (NULL for
// none, records.Nanos); exact reports whether it is the event's time to
// the nanosecond (else the payload keeps the time).
func eventNanos(t time.Time) (at any, exact bool) {
	n, valid, exact := records.Nanos(t)
	if !valid {
		return nil, false
	}
	return n, exact
}

// readEvent decodes event seq of run runID from its journal row
// (records.ReadEvent).
func readEvent(runID string, seq, version int64, kind, stepID, status string, attempt, at sql.NullInt64, payload []byte) (*journal.Event, error) {
	return records.ReadEvent(runID, &records.Row{Seq: seq, Version: version, Kind: kind, StepID: stepID, Status: status,
		Attempt: attempt.Int64, At: at.Int64, AtValid: at.Valid, Payload: payload})
}

// insertBlob stores a step payload under its sha256 and references it from
// run rk (both kept when already there).
func insertBlob(x *wtx, rk int64, sha, data any) error {
	if _, err := x.exec(stmtSQL[stInsertBlob], sha, data); err != nil {
		return fmt.Errorf("store blob: %w", err)
	}
	if _, err := x.exec(stmtSQL[stInsertBlobRef], sha, rk); err != nil {
		return fmt.Errorf("store blob reference: %w", err)
	}
	return nil
}

// journalRows selects cols of a run's journal rows that hold where, in
// order: its transitions in journal_index, then the tail not indexed yet.
// ?1 is the run ID.
func journalRows(cols, where string) string {
	return `SELECT j.id, ` + cols + ` FROM journal_index x JOIN journal j ON j.id BETWEEN x.id AND x.last
		WHERE x.rk = (SELECT rk FROM runs WHERE id = ?1) AND ` + where + `
		UNION ALL SELECT j.id, ` + cols + ` FROM journal j
		WHERE j.id > (SELECT indexed FROM journal_mark WHERE one = 1) AND j.rk = (SELECT rk FROM runs WHERE id = ?1) AND ` + where + `
		ORDER BY 1`
}

// eventsQuery selects a run's events with seq above ?2, at most ?3 (-1:
// all), in order.
var eventsQuery = journalRows("j.seq, j.version, j.kind, j.step_id, j.status, j.attempt, j.at, j.payload", "j.kind IS NOT NULL AND j.seq > ?2") + ` LIMIT ?3`

// Events returns a run's events with Seq > after, in order; limit ≤ 0 means
// all. A record that does not decode, or that a newer rein wrote, is an
// error naming the run and sequence.
func (s *Store) Events(ctx context.Context, runID string, after int64, limit int) (_ []*trace.Event, err error) {
	defer s.seen(&err)
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.reads.QueryContext(ctx, eventsQuery, runID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []*trace.Event
	for rows.Next() {
		var (
			id, seq, version     int64
			kind, stepID, status sql.NullString
			attempt, at          sql.NullInt64
			payload              sql.RawBytes
		)
		if err := rows.Scan(&id, &seq, &version, &kind, &stepID, &status, &attempt, &at, &payload); err != nil {
			return nil, fmt.Errorf("sqlite: events of run %s: %w", runID, err)
		}
		e, err := readEvent(runID, seq, version, kind.String, stepID.String, status.String, attempt, at, payload)
		if err != nil {
			return nil, badRecord(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: events of run %s: %w", runID, err)
	}
	if len(out) == 0 {
		if err := s.notFoundUnlessExists(ctx, "events", runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stepsQuery selects a run's step records in order.
var stepsQuery = journalRows(`j.step_id, j.version, j.record, j.output, j.input, j.error`, "j.record IS NOT NULL")

// Steps returns the step projection of a run in first-written order, with
// outputs and inputs stored as blobs read back: the run's step records
// folded, the last record of a step winning (only that one is decoded).
func (s *Store) Steps(ctx context.Context, runID string) (_ []*store.Step, err error) {
	defer s.seen(&err)
	rows, err := s.reads.QueryContext(ctx, stepsQuery, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: steps of run %s: %w", runID, err)
	}
	defer rows.Close()
	var fold records.LastSteps
	for rows.Next() {
		var (
			id, version int64
			sf          journal.StoredStep
		)
		if err := rows.Scan(&id, &sf.StepID, &version, &sf.Rec, &sf.Output, &sf.Input, &sf.Error); err != nil {
			return nil, fmt.Errorf("sqlite: steps of run %s: %w", runID, err)
		}
		sf.Version = uint64(max(version, 0))
		fold.Add(sf)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: steps of run %s: %w", runID, err)
	}
	rows.Close()
	last := fold.List()
	if len(last) == 0 {
		return nil, s.notFoundUnlessExists(ctx, "steps", runID)
	}
	out := make([]*store.Step, len(last))
	for i := range last {
		st, r, err := journal.DecodeStep(runID, &last[i])
		if err != nil {
			return nil, badRecord(err)
		}
		// Payloads stored as blobs (large ones only), read back.
		if r.OutputBlob {
			if st.Output, err = s.stepBlob(ctx, runID, st.StepID, r.OutputSHA); err != nil {
				return nil, err
			}
		}
		if r.InputBlob != "" {
			if st.Input, err = s.stepBlob(ctx, runID, st.StepID, r.InputBlob); err != nil {
				return nil, err
			}
		}
		out[i] = st
	}
	return out, nil
}

// stepBlob reads a step payload stored as a blob.
func (s *Store) stepBlob(ctx context.Context, runID, stepID, sha string) ([]byte, error) {
	var data []byte
	err := s.reads.QueryRowContext(ctx, `SELECT data FROM blobs WHERE sha256 = ?`, sha).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: sqlite: run %s step %s: payload blob %s is missing", store.ErrDamaged, runID, stepID, sha)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: run %s step %s: read blob %s: %w", runID, stepID, sha, err)
	}
	return data, nil
}

// Blob returns the content stored under a hex sha256 (store.ErrNotFound).
func (s *Store) Blob(ctx context.Context, sha string) (_ []byte, err error) {
	defer s.seen(&err)
	var data []byte
	err = s.reads.QueryRowContext(ctx, `SELECT data FROM blobs WHERE sha256 = ?`, sha).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: blob %s: %w", sha, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: blob %s: %w", sha, err)
	}
	return data, nil
}
