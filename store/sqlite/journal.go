package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/google/uuid"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
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
// The transition is a row of events per event and a row of steps per step
// it sets. The run row is written only when t.Run changes it, or when the
// transition has no event to carry the run's new version.
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
// goroutine): the writer checks its version and queues its events and
// steps rows for the batch's multi-row statements.
type commitData struct {
	runID                          string
	version, maxSeq, now           int64
	update, final                  bool
	status, errJSON, usage, settle any
	// events holds the events' JSON one after the other, evs their other
	// columns; steps the steps' records and payloads (aliasing the
	// transition's, which are the caller's again once Commit returns).
	events      []byte
	evs         []eventRow
	steps       []stepRow
	blobs       [][2]any // sha256, data
	approvals   []*store.Approval
	create      *store.CreateRunParams
	flowSHA     string // of create's flow text
	closeReason string // comment on the approvals a final commit closes
}

// eventRow is an event's columns but its JSON, which ends at end in
// commitData.events.
type eventRow struct {
	seq                       int64
	kind, stepID, at, callKey any
	end                       int
}

// stepRow is a step's record and payloads.
type stepRow struct {
	rec                    journal.StepRecord
	output, input, errJSON []byte
}

var commitPool = sync.Pool{New: func() any { return new(commitData) }}

// recycle returns c, with its buffers, to the pool.
func (c *commitData) recycle() {
	events, evs, steps := c.events[:0], c.evs[:0], c.steps[:0]
	clear(c.blobs)
	clear(steps[:cap(steps)])
	blobs := c.blobs[:0]
	*c = commitData{events: events, evs: evs, steps: steps, blobs: blobs}
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
		// an event's run is the transition's (t.RunID): stored events
		// leave it out (rk names it), and reading puts it back.
		ev := *e
		ev.RunID = ""
		c.events = journal.AppendEvent(c.events, &ev)
		r := eventRow{seq: e.Seq, at: eventNanos(e.Time), kind: string(e.Kind), stepID: nullText(e.StepID), end: len(c.events)}
		if e.Call != nil {
			r.callKey = e.Call.Key
		}
		c.evs = append(c.evs, r)
		c.maxSeq = e.Seq
	}
	for _, st := range t.Steps {
		rec, e := journal.SplitStep(st, s.opts.BlobThreshold)
		if e.OutputBlob != "" {
			c.blobs = append(c.blobs, [2]any{e.OutputBlob, e.OutputData})
		}
		if e.InputBlob != "" {
			c.blobs = append(c.blobs, [2]any{e.InputBlob, e.InputData})
		}
		c.steps = append(c.steps, stepRow{rec: rec, output: e.Output, input: e.Input, errJSON: e.Error})
	}
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
	if len(c.evs) == 0 {
		// no event carries the run's new version: the run row does.
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
	if err := appendJournal(x, rk, next, c); err != nil {
		return err
	}
	x.stageHead(rk, next)
	if c.final || c.status == string(trace.RunWaiting) {
		x.evict(c.runID, rk)
	}
	return nil
}

// appendJournal queues the transition's journal rows — its events, then
// its step records — for the batch's multi-row inserts. A run's
// transition queued after another of the same batch flushes that one's
// first (wtx.flush inserts all events before all step records).
func appendJournal(x *wtx, rk int64, h head, c *commitData) error {
	if x.queued[rk] {
		if err := x.flush(); err != nil {
			return err
		}
	}
	if x.queued == nil {
		x.queued = make(map[int64]bool)
	}
	x.queued[rk] = true
	start := 0
	for i := range c.evs {
		e := &c.evs[i]
		x.rows.args = eventArgs(x.rows.args, rk, e.seq, e.kind, e.stepID, e.at, e.callKey, text(c.events[start:e.end]), h.version, c.now)
		x.rows.n++
		start = e.end
	}
	for i := range c.steps {
		st := &c.steps[i]
		x.steps.args = stepArgs(x.steps.args, rk, h.seq, &st.rec, st.output, st.input, st.errJSON, h.version, c.now)
		x.steps.n++
	}
	return nil
}

// eventArgs appends the values of an event's journal row (eventsSQL).
func eventArgs(dst []any, rk, seq int64, kind, stepID, at, callKey, payload any, runVersion, committed int64) []any {
	return append(dst, rk, seq, kind, stepID, at, callKey, payload, runVersion, committed)
}

// stepArgs appends the values of a step record's journal row (stepsSQL):
// the record rec and its payloads (those in blobs nil), the run's last seq
// being seq.
func stepArgs(dst []any, rk, seq int64, rec *journal.StepRecord, output, input, errJSON []byte, runVersion, committed int64) []any {
	return append(dst, rk, seq, rec.StepID, rec.Type, string(rec.Status), int64(rec.Attempt), text(output), rec.OutputSHA,
		rec.OutputBlob, text(input), rec.InputBlob, rec.Idempotent, text(errJSON), nullNanos(rec.StartedAt), nullNanos(rec.SettledAt),
		runVersion, committed)
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

// nullNanos is a record's Unix ns, NULL for 0 (none).
func nullNanos(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

// eventNanos is an event's time in Unix ns for its at column: NULL for no
// time, and the nearest representable for one outside the years
// 1678–2262 (the payload keeps the exact time).
func eventNanos(t time.Time) any {
	switch {
	case t.IsZero():
		return nil
	case t.Before(minNanos):
		return int64(math.MinInt64)
	case t.After(maxNanos):
		return int64(math.MaxInt64)
	}
	return t.UnixNano()
}

var (
	minNanos = time.Unix(0, math.MinInt64)
	maxNanos = time.Unix(0, math.MaxInt64)
)

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
// order: those in journal_index, then the tail not indexed yet. ?1 is the
// run ID.
func journalRows(cols, where string) string {
	return `SELECT j.id, ` + cols + ` FROM journal_index x JOIN journal j ON j.id = x.id
		WHERE x.rk = (SELECT rk FROM runs WHERE id = ?1) AND ` + where + `
		UNION ALL SELECT j.id, ` + cols + ` FROM journal j
		WHERE j.id > (SELECT indexed FROM journal_mark WHERE one = 1) AND j.rk = (SELECT rk FROM runs WHERE id = ?1) AND ` + where + `
		ORDER BY 1`
}

// eventsQuery selects a run's events with seq above ?2, at most ?3 (-1:
// all), in order.
var eventsQuery = journalRows("j.seq, j.version, j.payload", "j.kind IS NOT NULL AND j.seq > ?2") + ` LIMIT ?3`

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
			id, seq, version int64
			payload          sql.RawBytes
		)
		if err := rows.Scan(&id, &seq, &version, &payload); err != nil {
			return nil, fmt.Errorf("sqlite: events of run %s: %w", runID, err)
		}
		e, err := journal.ReadEvent(runID, seq, uint64(max(version, 0)), payload)
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
var stepsQuery = journalRows(`j.step_id, j.version, j.type, j.status, j.attempt, j.output, j.output_sha, j.output_blob,
	j.input, j.input_blob, j.idempotent, j.error, j.started_at, j.settled_at`, "j.kind IS NULL")

// Steps returns the step projection of a run in first-written order, with
// outputs and inputs stored as blobs read back. A row of a record version
// this binary cannot read is an error naming the run and the step.
func (s *Store) Steps(ctx context.Context, runID string) (_ []*store.Step, err error) {
	defer s.seen(&err)
	rows, err := s.reads.QueryContext(ctx, stepsQuery, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: steps of run %s: %w", runID, err)
	}
	defer rows.Close()
	// the last record of each step is its state; steps keep the order
	// of their first records. blobs: the payloads of out's steps stored
	// as blobs (output, input sha256).
	var (
		out   []*store.Step
		index = map[string]int{}
		blobs = map[*store.Step][2]string{}
		// damage: why a step's last record does not read (nil: it does).
		damage []error
	)
	for rows.Next() {
		var (
			st                                = &store.Step{RunID: runID}
			id, version                       int64
			typ, status, outputSHA, inputBlob sql.NullString
			attempt                           sql.NullInt64
			outputBlob, idempotent            sql.NullBool
			output, input, errJSON            []byte
			started, settled                  sql.NullInt64
		)
		if err := rows.Scan(&id, &st.StepID, &version, &typ, &status, &attempt, &output, &outputSHA, &outputBlob,
			&input, &inputBlob, &idempotent, &errJSON, &started, &settled); err != nil {
			return nil, fmt.Errorf("sqlite: steps of run %s: %w", runID, err)
		}
		st.Type, st.Status, st.Attempt, st.OutputSHA, st.Idempotent = typ.String, trace.StepStatus(status.String), int(attempt.Int64), outputSHA.String, idempotent.Bool
		st.Output, st.Input, st.Error = nilIfEmpty(output), nilIfEmpty(input), nilIfEmpty(errJSON)
		st.StartedAt, st.SettledAt = journal.TimeOf(started.Int64), journal.TimeOf(settled.Int64)
		if outputBlob.Bool {
			st.Output = nil
			blobs[st] = [2]string{st.OutputSHA, inputBlob.String}
		} else if inputBlob.String != "" {
			blobs[st] = [2]string{"", inputBlob.String}
		}
		if i, ok := index[st.StepID]; ok {
			delete(blobs, out[i])
			out[i], damage[i] = st, stepDamage(runID, st.StepID, version, status.String)
			continue
		}
		index[st.StepID] = len(out)
		out, damage = append(out, st), append(damage, stepDamage(runID, st.StepID, version, status.String))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: steps of run %s: %w", runID, err)
	}
	for _, err := range damage {
		if err != nil {
			return nil, badRecord(err)
		}
	}
	rows.Close()
	if len(out) == 0 {
		return nil, s.notFoundUnlessExists(ctx, "steps", runID)
	}
	// Payloads stored as blobs (large ones only), read back.
	for st, b := range blobs {
		if b[0] != "" {
			if st.Output, err = s.stepBlob(ctx, runID, st.StepID, b[0]); err != nil {
				return nil, err
			}
		}
		if b[1] != "" {
			if st.Input, err = s.stepBlob(ctx, runID, st.StepID, b[1]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// stepDamage is the error for a steps row that does not read: a record
// version this binary cannot read (*journal.VersionError), or no status
// (a record that did not decode when its journal was converted, or a row
// overwritten), naming the run and the step; nil for a row that reads.
func stepDamage(runID, stepID string, version int64, status string) error {
	if err := journal.CheckVersion(runID, "step "+stepID, uint64(max(version, 0))); err != nil {
		return err
	}
	if status == "" {
		return fmt.Errorf("run %s step %s: step record has no status: the database is damaged", runID, stepID)
	}
	return nil
}

// nilIfEmpty is b, nil when empty (an empty payload reads back nil).
func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
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
