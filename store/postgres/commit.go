package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Commit appends t.Events and applies t.Run, t.Steps and t.Approvals in one
// transaction, on the condition that the run is still at t.Version:
// store.ErrConflict otherwise (and store.ErrNotFound when the run does not
// exist), with nothing applied. The whole transition is one pipelined
// batch — one round trip, one implicit transaction, one WAL flush — and it
// returns once PostgreSQL has committed it (as durable as the server's
// synchronous_commit makes it). On success t.Version is the new version,
// and events sent with Seq ≤ 0 carry the sequence number they were given
// (the run's last sequence plus their position); approvals sent without
// an ID carry the random one they were stored under.
//
// Step outputs and inputs larger than the blob threshold are stored once
// in the blob table. A lost connection, a server restart or a
// serialization failure is retried a few times: every attempt carries the
// same commit token, so an attempt that did commit before its answer was
// lost is recognised and reported as success, never applied twice.
func (s *Store) Commit(ctx context.Context, t *store.Transition) error {
	if t == nil || t.RunID == "" {
		return errors.New("postgres store: commit: transition without a run ID")
	}
	what := fmt.Sprintf("commit run %s at version %d", t.RunID, t.Version)
	if p := t.Create; p != nil {
		// The run's row is inserted by the same batch, in the same
		// transaction: a failed Commit leaves no run behind.
		switch {
		case p.ID != t.RunID:
			return fmt.Errorf("postgres store: %s: it creates run %q: want the same ID", what, p.ID)
		case t.Version != 0:
			return fmt.Errorf("postgres store: %s: a creating commit is at version 0", what)
		case p.IdempotencyKey != "":
			return fmt.Errorf("postgres store: %s: a creating commit takes no idempotency key (use CreateRun)", what)
		}
	}
	plan, err := s.plan(t)
	if err != nil {
		return fmt.Errorf("postgres store: %s: %w", what, err)
	}
	var backoff time.Duration // the first retry, likely on a fresh connection, is at once
	for attempt := 1; ; attempt++ {
		newVersion, prevSeq, err := s.commitOnce(ctx, plan)
		if s.afterAttempt != nil {
			err = s.afterAttempt(attempt, err)
		}
		if err != nil && attempt > 1 && isVersionMoved(err) {
			// An earlier attempt may have committed before its answer was lost.
			if v, seq, ok := s.committedBefore(ctx, t.RunID, plan.token); ok && v == t.Version+1 {
				newVersion, prevSeq, err = v, seq, nil
			}
		}
		if err == nil {
			t.Version = newVersion
			for i, e := range t.Events {
				if e.Seq <= 0 {
					e.Seq = prevSeq + int64(i) + 1
				}
			}
			switch {
			case plan.closing != nil:
				s.dropped.Note(t.RunID)
			case plan.create != nil:
				s.dropped.Forget(t.RunID)
			}
			return nil
		}
		if plan.create != nil && attempt == 1 && isRunTaken(err) {
			return fmt.Errorf("postgres store: %s: run exists: %w", what, store.ErrConflict)
		}
		if attempt >= commitAttempts || !retryable(ctx, err) {
			if attempt > 1 {
				what = fmt.Sprintf("%s (after %d attempts)", what, attempt)
			}
			if retryable(context.Background(), err) {
				what += ": the database connection failed, and whether the transition was committed is unknown: re-read the run"
			}
			return mapErr(what, err)
		}
		select {
		case <-ctx.Done():
			return mapErr(what, fmt.Errorf("%w (giving up on retry after: %v)", ctx.Err(), err))
		case <-time.After(backoff):
		}
		backoff = max(2*backoff, 25*time.Millisecond)
	}
}

// commitAttempts bounds Commit's retries of a transient failure: the first
// at once, the others after 25 ms, 50 ms, … (about 1.6 s in all).
const commitAttempts = 7

// commitPlan is a transition encoded once, sent by every attempt.
type commitPlan struct {
	token string
	// create is insertRunSQL's arguments, for a transition that creates
	// its run.
	create    []any
	head      []any
	blobs     [][]any
	steps     [][]any
	approvals [][]any
	// closing, for a final transition: the run ID and the comment its
	// pending approvals are closed with.
	closing []any
}

const (
	commitSQL = `SELECT new_version, prev_seq FROM rein_commit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	blobSQL   = `INSERT INTO rein_blobs (sha256, data) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING`
	stepSQL   = `INSERT INTO rein_steps AS s (run_id, step_id, type, status, attempt, output, output_sha,
			output_blob, input, input_blob, idempotent, error, started_at, settled_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT (run_id, step_id) DO UPDATE SET type = excluded.type, status = excluded.status,
			attempt = excluded.attempt, output = excluded.output, output_sha = excluded.output_sha,
			output_blob = excluded.output_blob, input = excluded.input, input_blob = excluded.input_blob,
			idempotent = excluded.idempotent, error = excluded.error, started_at = excluded.started_at,
			settled_at = excluded.settled_at`
	closeSQL = `UPDATE rein_approvals SET status = 'rejected', comment = $2, decided_at = now()
		WHERE run_id = $1 AND status = 'pending'`
	approvalSQL = `INSERT INTO rein_approvals (run_id, id, step_id, kind, status, tool, args, message,
			output, comment, decided_by, created_at, decided_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, coalesce($12, now()), $13)`
)

// plan encodes t: events as versioned JSON records, large payloads as
// blobs. Approvals without an ID get a random one (written back to t).
func (s *Store) plan(t *store.Transition) (*commitPlan, error) {
	p := &commitPlan{token: uuid.NewString()}
	if c := t.Create; c != nil {
		status := c.Status
		if status == "" {
			status = trace.RunPending
		}
		var owner any
		var ttl time.Duration
		if c.Owner != "" {
			owner, ttl = c.Owner, leaseTTL(c.LeaseTTL)
		}
		p.create = insertRunArgs(c, status, nil, owner, ttl)
	}
	seqs := make([]int64, len(t.Events))
	data := make([][]byte, len(t.Events))
	for i, e := range t.Events {
		if e == nil {
			return nil, fmt.Errorf("event %d is nil", i)
		}
		rec := *e
		if rec.RunID == "" {
			rec.RunID = t.RunID
		}
		b, err := json.Marshal(&rec)
		if err != nil {
			return nil, fmt.Errorf("encode event %d (%s): %w", e.Seq, e.Kind, err)
		}
		seqs[i], data[i] = e.Seq, b
	}
	var status string
	var errJSON, usage, settled any
	if u := t.Run; u != nil {
		status = string(u.Status)
		errJSON, usage, settled = bytesOrNil(u.Error), bytesOrNil(u.Usage), timeOrNil(u.SettledAt)
		if (&store.Run{Status: u.Status}).Finished() {
			p.closing = []any{t.RunID, u.CloseReason()}
		}
	}
	p.head = []any{t.RunID, t.Version, p.token, status, errJSON, usage, settled, seqs, data, store.JournalVersion}

	seen := map[string]bool{}
	// spill returns the inline value and the blob name of a payload.
	spill := func(b []byte) (any, any) {
		if len(b) == 0 {
			return nil, nil
		}
		if s.blobThreshold < 0 || len(b) <= s.blobThreshold {
			return b, nil
		}
		sum := sha256.Sum256(b)
		sha := hex.EncodeToString(sum[:])
		if !seen[sha] {
			seen[sha] = true
			p.blobs = append(p.blobs, []any{sha, b})
		}
		return nil, sha
	}
	for _, st := range t.Steps {
		if st == nil || st.StepID == "" {
			return nil, errors.New("step without a StepID")
		}
		out, outBlob := spill(st.Output)
		in, inBlob := spill(st.Input)
		outSHA := st.OutputSHA
		if outBlob != nil {
			outSHA = outBlob.(string)
		}
		p.steps = append(p.steps, []any{t.RunID, st.StepID, st.Type, string(st.Status), st.Attempt,
			out, outSHA, outBlob, in, inBlob, st.Idempotent, bytesOrNil(st.Error),
			timeOrNil(st.StartedAt), timeOrNil(st.SettledAt)})
	}
	for _, a := range t.Approvals {
		if a == nil || a.StepID == "" {
			return nil, errors.New("approval without a StepID")
		}
		if a.ID == "" {
			a.ID = uuid.NewString()
		}
		status := a.Status
		if status == "" {
			status = store.ApprovalPending
		}
		p.approvals = append(p.approvals, []any{t.RunID, a.ID, a.StepID, string(a.Kind), string(status),
			a.Tool, bytesOrNil(a.Args), a.Message, bytesOrNil(a.Output), a.Comment, a.DecidedBy,
			timeOrNil(a.CreatedAt), timeOrNil(a.DecidedAt)})
	}
	return p, nil
}

// commitOnce sends the plan as one batch: PostgreSQL runs it as one
// implicit transaction, so the first error rolls back everything.
func (s *Store) commitOnce(ctx context.Context, p *commitPlan) (newVersion, prevSeq int64, err error) {
	b := &pgx.Batch{}
	if p.create != nil {
		b.Queue(insertRunSQL, p.create...)
	}
	b.Queue(commitSQL, p.head...)
	for _, a := range p.blobs {
		b.Queue(blobSQL, a...)
	}
	for _, a := range p.steps {
		b.Queue(stepSQL, a...)
	}
	for _, a := range p.approvals {
		b.Queue(approvalSQL, a...)
	}
	if p.closing != nil {
		b.Queue(closeSQL, p.closing...)
	}
	br := s.pool.SendBatch(ctx, b)
	head := 0
	if p.create != nil {
		_, err = br.Exec()
		head = 1
	}
	if err == nil {
		err = br.QueryRow().Scan(&newVersion, &prevSeq)
	}
	for i := head + 1; err == nil && i < b.Len(); i++ {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return newVersion, prevSeq, err
}

// committedBefore reports the run's version and the last sequence before
// its last commit, when that commit carried token.
func (s *Store) committedBefore(ctx context.Context, runID, token string) (version, prevSeq int64, ok bool) {
	var last string
	err := again(ctx, true, func() error {
		return s.pool.QueryRow(ctx, `SELECT version, last_commit_seq, coalesce(last_commit::text, '') FROM rein_runs WHERE id = $1`, runID).
			Scan(&version, &prevSeq, &last)
	})
	return version, prevSeq, err == nil && last == token
}

// isRunTaken reports whether err is a unique violation of rein_runs: the
// run a creating commit inserts exists. (A creating commit has no
// idempotency key, so the key's index cannot be the one violated.)
func isRunTaken(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.TableName == "rein_runs"
}

func isVersionMoved(err error) bool {
	return errors.Is(mapErr("", err), store.ErrConflict)
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}
