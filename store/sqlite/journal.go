package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/frames"
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
// The transition is one journal row: its events and step projections as
// frames. The run row is written only when t.Run changes it.
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
	// the frames when it bound them): its buffers serve the next commit.
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
// goroutine): the writer checks its version and queues its journal row for
// the batch's multi-row insert.
type commitData struct {
	runID                          string
	version, maxSeq, now           int64
	update, final                  bool
	status, errJSON, usage, settle any
	events, steps                  []byte
	blobs                          [][2]any // sha256, data
	approvals                      []*store.Approval
	create                         *store.CreateRunParams
	flowSHA                        string // of create's flow text
	closeReason                    string // comment on the approvals a final commit closes
	scratch                        []byte
	// packed is the row's frames packed (pack.go), nil when the row is
	// stored plain; packBuf and packIn are its reused buffers.
	packed, packBuf, packIn []byte
}

var commitPool = sync.Pool{New: func() any { return new(commitData) }}

// recycle returns c, with its buffers, to the pool.
func (c *commitData) recycle() {
	events, steps, scratch := c.events[:0], c.steps[:0], c.scratch[:0]
	clear(c.blobs)
	blobs := c.blobs[:0]
	*c = commitData{events: events, steps: steps, scratch: scratch, blobs: blobs, packBuf: c.packBuf, packIn: c.packIn}
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
	buf := c.scratch
	for _, e := range t.Events {
		if e.Seq <= c.maxSeq {
			return nil, fmt.Errorf("sqlite: commit run %s: event seq %d does not follow seq %d", t.RunID, e.Seq, c.maxSeq)
		}
		// an event's run is the transition's (t.RunID): stored events
		// leave it out (it was a tenth of a row), and reading puts it back.
		c.events, buf = frames.EncodeEvent(c.events, buf, e)
		c.maxSeq = e.Seq
	}
	for _, st := range t.Steps {
		var e journal.EncodedStep
		c.steps, buf, e = frames.EncodeStep(c.steps, buf, st, s.opts.BlobThreshold)
		if e.OutputBlob != "" {
			c.blobs = append(c.blobs, [2]any{e.OutputBlob, e.OutputData})
		}
		if e.InputBlob != "" {
			c.blobs = append(c.blobs, [2]any{e.InputBlob, e.InputData})
		}
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
	c.scratch = buf
	// Packing costs the writer nothing: it happens here, on the caller's
	// goroutine, in parallel with the other runs'.
	var ok bool
	if c.packed, c.packBuf, c.packIn, ok = pack(c.packBuf, c.packIn, c.events, c.steps); !ok {
		c.packed = nil
	}
	return c, nil
}

// stage checks c's version and applies the writes that cannot wait (run
// row, blobs, approvals), then queues its journal row on x for the batch's
// multi-row insert (x.flush). An error before any write is clean.
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

// appendJournal queues the transition's journal row (its events and step
// frames, packed when that is smaller) for the batch's multi-row insert.
func appendJournal(x *wtx, rk int64, h head, c *commitData) {
	if c.packed != nil {
		x.rows.add(rk, h.version, h.seq, c.now, c.packed, nil)
	} else {
		x.rows.add(rk, h.version, h.seq, c.now, nullBytes(c.events), nullBytes(c.steps))
	}
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

// journalRows is the query of one run's journal rows in version order:
// those in journal_index, then the tail not indexed yet. ?1 is the run ID,
// ?2 the smallest seq of interest; col is the frames column's expression
// over a journal row aliased j.
func journalRows(col string) string {
	return `SELECT j.version, ` + col + ` FROM journal_index x JOIN journal j ON j.id = x.id
		WHERE x.rk = (SELECT rk FROM runs WHERE id = ?1) AND j.seq > ?2
		UNION ALL SELECT j.version, ` + col + ` FROM journal j
		WHERE j.id > (SELECT indexed FROM journal_mark WHERE one = 1) AND j.rk = (SELECT rk FROM runs WHERE id = ?1) AND j.seq > ?2
		ORDER BY 1`
}

var (
	// a packed row (pack.go) holds both columns' frames in events.
	eventRowsSQL = journalRows("j.events")
	stepRowsSQL  = journalRows("CASE WHEN substr(j.events, 1, 1) = x'00' THEN j.events ELSE j.steps END")
)

// eachRow calls fn with the frames column of each of a run's journal rows
// whose seq is above after, in order; fn returns false to stop.
func (s *Store) eachRow(ctx context.Context, what, q, runID string, after int64, fn func(data []byte) (bool, error)) error {
	rows, err := s.reads.QueryContext(ctx, q, runID, after)
	if err != nil {
		return fmt.Errorf("sqlite: %s of run %s: %w", what, runID, err)
	}
	defer rows.Close()
	any := false
	for rows.Next() {
		any = true
		var (
			version int64
			data    []byte
		)
		if err := rows.Scan(&version, &data); err != nil {
			return fmt.Errorf("sqlite: %s of run %s: %w", what, runID, err)
		}
		more, err := fn(data)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: %s of run %s: %w", what, runID, err)
	}
	if !any {
		return s.notFoundUnlessExists(ctx, what, runID)
	}
	return nil
}

// Events returns a run's events with Seq > after, in order; limit ≤ 0 means
// all. A record that does not decode, or that a newer rein wrote, is an
// error naming the run and sequence.
func (s *Store) Events(ctx context.Context, runID string, after int64, limit int) (_ []*trace.Event, err error) {
	defer s.seen(&err)
	if limit <= 0 {
		limit = -1
	}
	var (
		out []*trace.Event
		buf []byte // decoded events are copies: one buffer serves every row
	)
	err = s.eachRow(ctx, "events", eventRowsSQL, runID, after, func(data []byte) (bool, error) {
		var err error
		if isPacked(data) {
			if data, _, buf, err = unpack(runID, data, buf); err != nil {
				return false, err
			}
		}
		if out, err = frames.DecodeEvents(out, runID, data, after, limit); err != nil {
			return false, badRecord(err)
		}
		return limit < 0 || len(out) < limit, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Steps returns the step projection of a run in first-written order, with
// outputs and inputs stored as blobs read back: the journal's step records
// folded, the last record of a step winning (only that one is decoded).
func (s *Store) Steps(ctx context.Context, runID string) (_ []*store.Step, err error) {
	defer s.seen(&err)
	var fold frames.Fold
	err = s.eachRow(ctx, "steps", stepRowsSQL, runID, -1, func(data []byte) (bool, error) {
		if isPacked(data) {
			// a buffer of its own: the folded frames alias it.
			var err error
			if _, data, _, err = unpack(runID, data, nil); err != nil {
				return false, err
			}
		}
		if err := fold.Add(runID, data); err != nil {
			return false, badRecord(err)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	last := fold.Last
	out := make([]*store.Step, len(last))
	for i := range last {
		sf := &last[i]
		st, r, err := journal.DecodeStep(runID, sf)
		if err != nil {
			return nil, badRecord(err)
		}
		st.Output, st.Input, st.Error = cloneBytes(st.Output), cloneBytes(st.Input), cloneBytes(st.Error)
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
