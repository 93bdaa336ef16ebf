package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// encodedEvent is an event ready to insert.
type encodedEvent struct {
	seq  int64
	data []byte
}

// encodedStep is a step projection ready to upsert, its large payloads
// split off into blobs.
type encodedStep struct {
	s                     *store.Step
	output, input         []byte
	outputSHA             string
	outputBlob, inputBlob any // sha256 or nil
	outputData, inputData []byte
	started, settled      any
}

func (s *Store) encodeStep(st *store.Step) encodedStep {
	e := encodedStep{s: st, output: st.Output, input: st.Input, outputSHA: st.OutputSHA,
		started: nanos(st.StartedAt), settled: nanos(st.SettledAt)}
	if len(st.Output) > s.opts.BlobThreshold {
		sum := sha256.Sum256(st.Output)
		e.outputSHA = hex.EncodeToString(sum[:])
		e.outputBlob, e.outputData, e.output = e.outputSHA, st.Output, nil
	}
	if len(st.Input) > s.opts.BlobThreshold {
		sum := sha256.Sum256(st.Input)
		sha := hex.EncodeToString(sum[:])
		e.inputBlob, e.inputData, e.input = sha, st.Input, nil
	}
	return e
}

// Commit appends t.Events and applies t.Run, t.Steps and t.Approvals in one
// transaction, on the condition that the run's version is still t.Version
// (store.ErrConflict otherwise; store.ErrNotFound for an unknown run). It
// returns once the transaction holding it committed; concurrent Commits of
// different runs share one transaction. Nothing of a failed Commit is
// applied and t.Version is left as it was. A Commit that settles the run
// (status succeeded, failed or cancelled) also drops the run's lease: a
// finished run has no writer to protect, and the owner's ReleaseLease that
// follows is then answered without a transaction.
func (s *Store) Commit(ctx context.Context, t *store.Transition) error {
	if t == nil || t.RunID == "" {
		return errors.New("sqlite: commit: empty run ID")
	}
	c, err := s.commitOp(t)
	if err != nil {
		return err
	}
	var after func()
	if t.Run != nil && (&store.Run{Status: t.Run.Status}).Finished() {
		runID := t.RunID
		after = func() { s.noteDropped(runID) }
	}
	if err := s.w.doCommit(ctx, c, after); err != nil {
		return fmt.Errorf("sqlite: commit run %s: %w", t.RunID, err)
	}
	t.Version++
	return nil
}

// commitData is a transition encoded for the writer (on the caller's
// goroutine): the writer checks its version and applies it in a batch's
// transaction, appending its events and steps to the rows the batch inserts
// with one multi-row statement per table.
type commitData struct {
	runID                          string
	version, maxSeq, now           int64
	bump, final                    bool
	status, errJSON, usage, settle any
	evs                            []encodedEvent
	steps                          []encodedStep
	approvals                      []*store.Approval
}

// commitOp encodes t (outside the writer, on the caller's goroutine).
func (s *Store) commitOp(t *store.Transition) (*commitData, error) {
	c := &commitData{runID: t.RunID, version: t.Version, now: time.Now().UnixNano(),
		// Most transitions only append: they bump the run's version without
		// assigning status, which would rewrite its runs_status_created entry.
		bump: t.Run == nil}
	c.evs = make([]encodedEvent, len(t.Events))
	for i, e := range t.Events {
		data, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("sqlite: commit run %s: encode event seq %d: %w", t.RunID, e.Seq, err)
		}
		c.evs[i] = encodedEvent{seq: e.Seq, data: data}
		c.maxSeq = max(c.maxSeq, e.Seq)
	}
	c.steps = make([]encodedStep, len(t.Steps))
	for i, st := range t.Steps {
		c.steps[i] = s.encodeStep(st)
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
		c.status, c.errJSON, c.usage, c.settle = nullText(string(u.Status)), nullBytes(u.Error), nullBytes(u.Usage), nanos(u.SettledAt)
		c.final = (&store.Run{Status: u.Status}).Finished()
	}
	return c, nil
}

// stage applies c's version check and the writes that cannot wait (blobs,
// approvals), then queues its events and steps on x for the batch's
// multi-row inserts (x.flush). An error before any write is clean.
func (c *commitData) stage(x *wtx) error {
	rk, cached := x.w.keys[c.runID]
	for {
		var res sql.Result
		var err error
		if c.bump {
			res, err = x.stmt(stBumpRun).ExecContext(x.ctx, c.maxSeq, c.now, c.runID, c.version, rk)
		} else {
			res, err = x.stmt(stUpdateRunCommit).ExecContext(x.ctx, c.maxSeq, c.now, c.status, c.errJSON, c.usage, c.settle, c.runID, c.version, c.final, rk)
		}
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n > 0 {
			break
		}
		// The version moved on, the run is unknown, or its key was not
		// (rightly) cached.
		key, ok, err := x.runKey(c.runID)
		switch {
		case err != nil:
			return err
		case !ok:
			delete(x.w.keys, c.runID)
			return clean(store.ErrNotFound)
		case cached && key == rk:
			return clean(fmt.Errorf("version %d is stale: %w", c.version, store.ErrConflict))
		}
		rk, cached = key, true
		x.w.noteKey(c.runID, rk)
	}
	for _, st := range c.steps {
		for _, b := range [][2]any{{st.outputBlob, st.outputData}, {st.inputBlob, st.inputData}} {
			if b[0] != nil {
				if _, err := x.stmt(stInsertBlob).ExecContext(x.ctx, b[0], b[1]); err != nil {
					return fmt.Errorf("store blob: %w", err)
				}
			}
		}
	}
	for _, a := range c.approvals {
		if _, err := x.stmt(stInsertApproval).ExecContext(x.ctx, c.runID, a.ID, a.StepID, string(a.Kind), string(a.Status),
			a.Tool, nullBytes(a.Args), a.Message, nullBytes(a.Output), a.Comment, a.DecidedBy,
			a.CreatedAt.UnixNano(), nanos(a.DecidedAt)); err != nil {
			return fmt.Errorf("insert approval %s: %w", a.ID, mapErr(err))
		}
	}
	for _, e := range c.evs {
		x.rows[rowsEvents].add(rk, e.seq, e.data)
	}
	for _, st := range c.steps {
		p := st.s
		x.rows[rowsSteps].add(rk, p.StepID, p.Type, string(p.Status), p.Attempt,
			nullBytes(st.output), st.outputSHA, st.outputBlob, nullBytes(st.input), st.inputBlob, p.Idempotent,
			nullBytes(p.Error), st.started, st.settled)
	}
	return nil
}

// Events returns a run's events with Seq > after, in order; limit ≤ 0 means
// all. A record that does not decode, or that a newer rein wrote, is an
// error naming the run and sequence.
func (s *Store) Events(ctx context.Context, runID string, after int64, limit int) ([]*trace.Event, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT seq, version, data FROM events WHERE rk = (SELECT rk FROM runs WHERE id = ?) AND seq > ? ORDER BY seq LIMIT ?`, runID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events of run %s: %w", runID, err)
	}
	var out []*trace.Event
	for rows.Next() {
		var (
			seq     int64
			version int
			data    []byte
		)
		if err := rows.Scan(&seq, &version, &data); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: events of run %s: %w", runID, err)
		}
		e, err := decodeEvent(runID, seq, version, data)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, e)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("sqlite: events of run %s: %w", runID, err)
	}
	if len(out) == 0 {
		if err := s.notFoundUnlessExists(ctx, "events", runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeEvent decodes one journal record.
func decodeEvent(runID string, seq int64, version int, data []byte) (*trace.Event, error) {
	switch {
	case version > store.JournalVersion:
		return nil, fmt.Errorf("sqlite: run %s seq %d: journal record version %d is from a newer rein (this binary reads up to version %d): upgrade rein",
			runID, seq, version, store.JournalVersion)
	case version < 1:
		return nil, fmt.Errorf("sqlite: run %s seq %d: journal record has no valid version (%d): the database is damaged", runID, seq, version)
	}
	var e trace.Event
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("sqlite: run %s seq %d: journal record does not decode (%w): the database is damaged", runID, seq, err)
	}
	if e.Seq != seq {
		return nil, fmt.Errorf("sqlite: run %s seq %d: journal record says seq %d: the database is damaged", runID, seq, e.Seq)
	}
	return &e, nil
}

// Steps returns the step projection of a run in first-written order, with
// outputs and inputs stored as blobs read back.
func (s *Store) Steps(ctx context.Context, runID string) ([]*store.Step, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT s.step_id, s.type, s.status, s.attempt, coalesce(s.output, bo.data), s.output_sha,
		s.output_blob, coalesce(s.input, bi.data), s.input_blob, s.idempotent, s.error, s.started_at, s.settled_at
		FROM steps s LEFT JOIN blobs bo ON bo.sha256 = s.output_blob LEFT JOIN blobs bi ON bi.sha256 = s.input_blob
		WHERE s.rk = (SELECT rk FROM runs WHERE id = ?) ORDER BY s.id`, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: steps of run %s: %w", runID, err)
	}
	var out []*store.Step
	for rows.Next() {
		var (
			st                   = store.Step{RunID: runID}
			outBlob, inBlob      sql.NullString
			output, input, errJS []byte
			started, settled     sql.NullInt64
		)
		if err := rows.Scan(&st.StepID, &st.Type, &st.Status, &st.Attempt, &output, &st.OutputSHA, &outBlob, &input, &inBlob,
			&st.Idempotent, &errJS, &started, &settled); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: steps of run %s: %w", runID, err)
		}
		if (outBlob.Valid && output == nil) || (inBlob.Valid && input == nil) {
			rows.Close()
			return nil, fmt.Errorf("sqlite: run %s step %s: payload blob is missing: the database is damaged", runID, st.StepID)
		}
		st.Output, st.Input, st.Error = output, input, errJS
		st.StartedAt, st.SettledAt = fromNanos(started), fromNanos(settled)
		out = append(out, &st)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("sqlite: steps of run %s: %w", runID, err)
	}
	if len(out) == 0 {
		if err := s.notFoundUnlessExists(ctx, "steps", runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Blob returns the content stored under a hex sha256 (store.ErrNotFound).
func (s *Store) Blob(ctx context.Context, sha string) ([]byte, error) {
	var data []byte
	err := s.rdb.QueryRowContext(ctx, `SELECT data FROM blobs WHERE sha256 = ?`, sha).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: blob %s: %w", sha, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: blob %s: %w", sha, err)
	}
	return data, nil
}
