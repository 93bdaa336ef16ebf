package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Commit appends t.Events and applies t.Run, t.Steps and t.Approvals in
// one transaction, on the condition that the run is still at t.Version:
// store.ErrConflict otherwise (and store.ErrNotFound when the run does not
// exist), with nothing applied. It returns once PostgreSQL has committed
// it (as durable as the server's synchronous_commit makes it); on success
// t.Version is the new version.
//
// The transition is one row of rein_journal, keyed by (run, new version),
// and a row of rein_records per event and step record, inserted by one
// statement (the records in a CTE after the row): most transitions are
// that statement, one round trip, one WAL flush. It inserts only when the run's newest row is at t.Version, and
// the primary key refuses a second row at the same version, so of two
// writers racing from one version exactly one wins. A transition that
// changes the run row (status, error, usage) updates it in the same
// statement; blobs and approvals follow in one transaction with it, each
// applied only if the row was.
//
// Events must carry their sequence numbers, increasing and above the
// run's last. Step outputs and inputs larger than the blob threshold are
// stored once in the blob table. A lost connection, a server restart or a
// serialization failure is retried a few times: every attempt carries the
// same commit token, so an attempt that did commit before its answer was
// lost is recognised and reported as success, never applied twice.
func (s *Store) Commit(ctx context.Context, t *store.Transition) error {
	if t == nil || t.RunID == "" {
		return errors.New("postgres store: commit: transition without a run ID")
	}
	what := fmt.Sprintf("commit run %s at version %d", t.RunID, t.Version)
	if p := t.Create; p != nil {
		// The run's row is inserted by the same statement: a failed Commit
		// leaves no run behind.
		switch {
		case p.ID != t.RunID:
			return fmt.Errorf("postgres store: %s: it creates run %q: want the same ID", what, p.ID)
		case t.Version != 0:
			return fmt.Errorf("postgres store: %s: a creating commit is at version 0", what)
		case p.IdempotencyKey != "":
			return fmt.Errorf("postgres store: %s: a creating commit takes no idempotency key (use CreateRun)", what)
		case p.Owner != "" && t.Now.IsZero():
			return fmt.Errorf("postgres store: %s: it creates the run leased to %s: %w", what, p.Owner, store.ErrNoTime)
		}
	}
	plan, err := s.plan(t)
	if err != nil {
		return fmt.Errorf("postgres store: %s: %w", what, err)
	}
	var backoff time.Duration // the first retry, likely on a fresh connection, is at once
	for attempt := 1; ; attempt++ {
		applied, err := s.commitOnce(ctx, plan)
		if err == nil && !applied {
			err = s.whyNot(ctx, plan)
		}
		if s.afterAttempt != nil {
			err = s.afterAttempt(attempt, err)
		}
		if err != nil && attempt > 1 && errors.Is(mapErr("", err), store.ErrConflict) && s.committedBefore(ctx, plan) {
			// An earlier attempt committed before its answer was lost.
			err = nil
		}
		if err == nil {
			t.Version++
			switch {
			case plan.final:
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
			return mapErr(what, fmt.Errorf("%w (giving up on retry after: %v)", ctx.Err(), err)) //nolint:errorlint // the context's end is the error; the last attempt's is text
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
	runID   string
	version int64 // the version the transition builds on
	token   string
	// minSeq and maxSeq bound the transition's events (minSeq is
	// math.MaxInt64 and maxSeq 0 when it has none).
	minSeq, maxSeq int64
	rows           recordRows // the transition's records
	// update is set when the transition changes the run row: its status
	// ("" keeps it), error, usage and settled time.
	update                  bool
	status                  string
	errJSON, usage, settled any
	// final: the run reaches a final status; its pending approvals are
	// closed with closeReason.
	final       bool
	closeReason string
	create      *store.CreateRunParams
	// now is the transition's time (store.Transition.Now), nil for the
	// database's clock.
	now any
	// after are the statements that follow the journal row in its
	// transaction (blobs, approvals, call records, …), each guarded by
	// appliedSQL: an entity written with a transition adds its own
	// (addAfter) from a function in its file. approvals counts those of
	// approvals.
	after     []afterStmt
	approvals int
}

// afterStmt is a statement of a Commit's transaction after its journal row: sql
// takes the run, the new version and the commit token as $1 … $3 (for
// appliedSQL), and args from $4 on.
type afterStmt struct {
	sql  string
	args []any
}

// addAfter adds a statement after the journal row (afterStmt).
func (p *commitPlan) addAfter(sql string, args ...any) {
	p.after = append(p.after, afterStmt{sql: sql, args: args})
}

// The statements of a Commit. transitionSQL inserts the transition's row of
// rein_journal ($1 run, $2 the version it builds on, $3 token, $4 its
// largest seq, $5 its smallest seq, $6 the caller's time, NULL for the
// database's) only when the run's newest row is at $2 and holds a smaller
// seq; at version 0 the run must exist and have no row. A row already at
// $2 + 1 is a unique violation: the race's loser. journalSQL adds the
// transition's records ($7 … $19, recordRows.args) and returns how many
// rows of rein_journal it inserted (0 or 1): the records are inserted
// only with it.
const (
	transitionSQL = `INSERT INTO rein_journal (run_id, version, seq, token, at)
		SELECT $1, $2 + 1, greatest(h.seq, $4), $3::uuid, coalesce($6::timestamptz, now())
		FROM (SELECT j.seq FROM rein_journal j WHERE j.run_id = $1 AND j.version = $2
			UNION ALL SELECT 0 FROM rein_runs r WHERE $2 = 0 AND r.id = $1) h
		WHERE h.seq < $5
		RETURNING run_id, version, seq`
	// recordsAt is the first parameter of the records in journalSQL and
	// commitRunSQL.
	recordsAt = 7
)

var (
	journalSQL = `WITH j AS (` + transitionSQL + `), x AS (` + recordsSQL("j", recordsAt) + `) SELECT count(*) FROM j`

	// commitRunSQL is journalSQL plus the run row's update ($20 status, ""
	// for none; $21 error, $22 usage, $23 settled time) and, for a final
	// status ($24), the closing of the run's pending approvals with
	// comment $25.
	commitRunSQL = `WITH j AS (` + transitionSQL + `), x AS (` + recordsSQL("j", recordsAt) + `),
		r AS (UPDATE rein_runs r SET
			status = coalesce(nullif($20, ''), r.status),
			error = coalesce($21, r.error),
			usage = coalesce($22, r.usage),
			settled_at = CASE
				WHEN $23::timestamptz IS NOT NULL THEN $23
				WHEN r.settled_at IS NULL AND $24 THEN coalesce($6::timestamptz, now())
				ELSE r.settled_at END,
			updated_at = coalesce($6::timestamptz, now()),
			-- a finished run holds no lease
			lease_owner = CASE WHEN $24 THEN NULL ELSE r.lease_owner END,
			lease_expires = CASE WHEN $24 THEN NULL ELSE r.lease_expires END
			FROM j WHERE r.id = j.run_id),
		c AS (UPDATE rein_approvals a SET status = 'rejected', comment = $25, decided_at = coalesce($6::timestamptz, now())
			FROM j WHERE $24 AND a.run_id = j.run_id AND a.status = 'pending')
		SELECT count(*) FROM j`

	// createSQL inserts the run ($1 … $16, the transition's run update
	// folded in), its first row of rein_journal ($17 token, $18 largest
	// seq), both at $19 (the caller's time; NULL for the database's, never
	// with an owner), its tenant ($20) and its records ($21 … $33). A
	// taken ID is a unique violation of rein_runs.
	createSQL = `WITH r AS (
			INSERT INTO rein_runs (id, flow, flow_path, flow_hash, flow_text, input, meta, status,
				session, retention_ns, lease_owner, lease_expires, error, usage, settled_at, created_at, updated_at, tenant)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
				CASE WHEN $11::text IS NULL THEN NULL ELSE $19::timestamptz + $12 * interval '1 microsecond' END,
				$13, $14, CASE WHEN $15::timestamptz IS NOT NULL THEN $15 WHEN $16 THEN coalesce($19::timestamptz, now()) END,
				coalesce($19::timestamptz, now()), coalesce($19::timestamptz, now()), $20)
			RETURNING id),
		j AS (INSERT INTO rein_journal (run_id, version, seq, token, at)
			SELECT r.id, 1, $18::bigint, $17::uuid, coalesce($19::timestamptz, now()) FROM r
			RETURNING run_id, version, seq),
		x AS (` + recordsSQL("j", 21) + `)
		SELECT count(*) FROM j`
)

const (
	// The statements after the row, each applied only if the row with
	// the commit's token ($1 run, $2 new version, $3 token) was inserted.
	appliedSQL = `EXISTS (SELECT 1 FROM rein_journal j WHERE j.run_id = $1 AND j.version = $2 AND j.token = $3)`
	blobSQL    = `WITH b AS (INSERT INTO rein_blobs (sha256, data) SELECT $4::text, $5::bytea WHERE ` + appliedSQL + `
			ON CONFLICT (sha256) DO NOTHING)
		INSERT INTO rein_blob_refs (sha256, run_id) SELECT $4::text, $1::text WHERE ` + appliedSQL + `
			ON CONFLICT DO NOTHING`
	approvalSQL = `INSERT INTO rein_approvals (run_id, id, step_id, kind, status, tool, args, message,
			output, comment, decided_by, created_at, decided_at)
		SELECT $1::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::bytea, $10::text,
			$11::bytea, $12::text, $13::text, coalesce($14::timestamptz, now()), $15::timestamptz WHERE ` + appliedSQL
	closeSQL = `UPDATE rein_approvals SET status = 'rejected', comment = $4, decided_at = coalesce($5::timestamptz, now())
		WHERE run_id = $1 AND status = 'pending' AND ` + appliedSQL
)

// addBlob adds the storing of a step payload as a blob (once per sha256 in
// a transition; seen holds those added).
func addBlob(p *commitPlan, seen map[string]bool, sha string, data []byte) {
	if sha == "" || seen[sha] {
		return
	}
	seen[sha] = true
	p.addAfter(blobSQL, sha, data)
}

// plan encodes t: events and step records as frames, large payloads as
// blobs. Approvals without an ID get a random one (written back to t).
func (s *Store) plan(t *store.Transition) (*commitPlan, error) {
	p := &commitPlan{runID: t.RunID, version: t.Version, token: uuid.NewString(), minSeq: math.MaxInt64, create: t.Create, now: timeOrNil(t.Now)}
	var buf []byte
	for i, e := range t.Events {
		switch {
		case e == nil:
			return nil, fmt.Errorf("event %d is nil", i)
		case e.Seq <= p.maxSeq:
			return nil, fmt.Errorf("event %d (%s) has seq %d, not after %d: events carry their sequence numbers, increasing", i, e.Kind, e.Seq, p.maxSeq)
		}
		buf = p.rows.event(e, buf)
		p.minSeq, p.maxSeq = min(p.minSeq, e.Seq), e.Seq
	}
	seen := map[string]bool{}
	for _, st := range t.Steps {
		if st == nil || st.StepID == "" {
			return nil, errors.New("step without a StepID")
		}
		var e journal.EncodedStep
		e, buf = journal.EncodeStep(st, s.blobThreshold, buf[:0])
		p.rows.step(st, &e)
		addBlob(p, seen, e.OutputBlob, e.OutputData)
		addBlob(p, seen, e.InputBlob, e.InputData)
	}
	for _, a := range t.Approvals {
		if err := addApproval(p, a); err != nil {
			return nil, err
		}
	}
	if u := t.Run; u != nil {
		p.update = true
		p.status = string(u.Status)
		p.errJSON, p.usage, p.settled = bytesOrNil(u.Error), bytesOrNil(u.Usage), timeOrNil(u.SettledAt)
		if p.final = (&store.Run{Status: u.Status}).Finished(); p.final {
			p.closeReason = u.CloseReason()
		}
	}
	if c := t.Create; c != nil && p.status == "" {
		// the run starts with the status it is created with
		if p.final = (&store.Run{Status: c.Status}).Finished(); p.final {
			p.closeReason = (&store.RunUpdate{Status: c.Status}).CloseReason()
		}
	}
	return p, nil
}

// commitOnce sends the plan: one statement, or, with blobs, approvals or
// calls, a transaction of that statement and theirs (the first error rolls
// back everything). applied reports whether the row was
// inserted; when it was not, nothing was.
func (s *Store) commitOnce(ctx context.Context, p *commitPlan) (applied bool, err error) {
	stmt, args := journalSQL, append([]any{p.runID, p.version, p.token, p.maxSeq, p.minSeq, p.now}, p.rows.args()...)
	switch {
	case p.create != nil:
		stmt, args = createSQL, append(createArgs(p), p.rows.args()...)
	case p.update:
		stmt, args = commitRunSQL, append(args, p.status, p.errJSON, p.usage, p.settled, p.final, p.closeReason)
	}
	after := p.after
	if p.final && p.approvals > 0 {
		// the approvals this transition asks for close with the run too.
		after = append(after[:len(after):len(after)], afterStmt{closeSQL, []any{p.closeReason, p.now}})
	}
	if len(after) == 0 {
		return readCount(s.db.QueryRowContext(ctx, stmt, args...))
	}
	// blobs, approvals, calls: the statements after the row, in one
	// transaction with it.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit; a failed one's error is the statement's
	if applied, err = readCount(tx.QueryRowContext(ctx, stmt, args...)); err != nil || !applied {
		return false, err
	}
	key := []any{p.runID, p.version + 1, p.token}
	for _, a := range after {
		if _, err := tx.ExecContext(ctx, a.sql, append(key[:3:3], a.args...)...); err != nil {
			return false, err
		}
	}
	return true, tx.Commit()
}

// readCount reads a commit statement's answer: whether it inserted its
// row of rein_journal.
func readCount(row scanner) (bool, error) {
	var n int64
	err := row.Scan(&n)
	return err == nil && n == 1, err
}

// createArgs are createSQL's arguments.
func createArgs(p *commitPlan) []any {
	c := p.create
	status := string(c.Status)
	if p.status != "" {
		status = p.status
	}
	if status == "" {
		status = string(trace.RunPending)
	}
	var owner any
	var ttl time.Duration
	if c.Owner != "" && !p.final {
		owner, ttl = c.Owner, leaseTTL(c.LeaseTTL)
	}
	return []any{c.ID, c.Flow, c.FlowPath, c.FlowHash, bytesOrNil(c.FlowText), bytesOrNil(c.Input), bytesOrNil(c.Meta),
		status, c.Session, int64(c.Retention), owner, ttl.Microseconds(), p.errJSON, p.usage, p.settled, p.final,
		p.token, p.maxSeq, p.now, c.Tenant}
}

// whyNot explains a commit whose row was not inserted: the run does not
// exist (store.ErrNotFound), moved on from the plan's version, or already
// holds a seq the transition repeats (store.ErrConflict).
func (s *Store) whyNot(ctx context.Context, p *commitPlan) error {
	var exists bool
	var version, seq int64
	err := again(ctx, true, func() error {
		return s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM rein_runs WHERE id = $1),
			coalesce(h.version, 0), coalesce(h.seq, 0)
			FROM (SELECT 1) one LEFT JOIN LATERAL (`+headSQL("$1")+`) h ON true`, p.runID).Scan(&exists, &version, &seq)
	})
	switch {
	case err != nil:
		return err
	case !exists:
		return fmt.Errorf("the run does not exist: %w", store.ErrNotFound)
	case version != p.version:
		return fmt.Errorf("version %d is stale (the run is at %d): %w", p.version, version, store.ErrConflict)
	default:
		return fmt.Errorf("event seq %d is not after the run's last seq %d: %w", p.minSeq, seq, store.ErrConflict)
	}
}

// committedBefore reports whether the run's row after the plan's version
// carries the plan's token: an earlier attempt of this Commit wrote it.
func (s *Store) committedBefore(ctx context.Context, p *commitPlan) bool {
	var token string
	err := again(ctx, true, func() error {
		return s.db.QueryRowContext(ctx, `SELECT coalesce(token::text, '') FROM rein_journal WHERE run_id = $1 AND version = $2`,
			p.runID, p.version+1).Scan(&token)
	})
	return err == nil && token == p.token
}

// isRunTaken reports whether err is a unique violation of rein_runs: the
// run a creating commit inserts exists. (A creating commit has no
// idempotency key, so the key's index cannot be the one violated.)
func isRunTaken(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.TableName == "rein_runs"
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}
