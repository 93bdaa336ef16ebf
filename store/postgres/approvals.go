package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

const approvalCols = `a.id, a.run_id, a.step_id, a.kind, a.status, a.tool, a.args, a.message, a.output,
	a.comment, a.decided_by, a.created_at, a.decided_at`

func scanApproval(row scanner) (*store.Approval, error) {
	var a store.Approval
	var kind, status string
	var args, output []byte
	var decided *time.Time
	if err := row.Scan(&a.ID, &a.RunID, &a.StepID, &kind, &status, &a.Tool, &args, &a.Message, &output,
		&a.Comment, &a.DecidedBy, &a.CreatedAt, &decided); err != nil {
		return nil, err
	}
	a.Kind, a.Status = store.ApprovalKind(kind), store.ApprovalStatus(status)
	a.Args, a.Output = args, output
	if decided != nil {
		a.DecidedAt = *decided
	}
	return &a, nil
}

// Approvals lists approvals in the order they were requested, filtered by
// run and status when those are set (nil lists all).
func (s *Store) Approvals(ctx context.Context, p *store.ListApprovalsParams) ([]*store.Approval, error) {
	var q store.ListApprovalsParams
	if p != nil {
		q = *p
	}
	var out []*store.Approval
	err := again(ctx, true, func() error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, `SELECT `+approvalCols+` FROM rein_approvals a
		WHERE ($1 = '' OR a.run_id = $1) AND ($2 = '' OR a.status = $2)
		ORDER BY a.ord`, q.RunID, string(q.Status))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			a, err := scanApproval(rows)
			if err != nil {
				return err
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, mapErr("list approvals", err)
	}
	return out, nil
}

// DecideApproval settles the step's pending approval (the latest, should
// there be several) and bumps the run's version (a journal row without
// frames), in one statement; a Commit that takes the version first makes
// it try again. It is decided at p.Now (the database's clock when zero). No
// approval for the step is store.ErrNotFound; one already decided (by
// anyone, including a concurrent decider) is store.ErrConflict.
func (s *Store) DecideApproval(ctx context.Context, p *store.DecideApprovalParams) (*store.Approval, error) {
	what := fmt.Sprintf("decide approval of run %s step %s", p.RunID, p.StepID)
	switch p.Status {
	case store.ApprovalApproved, store.ApprovalRejected, store.ApprovalSettled:
	default:
		return nil, fmt.Errorf("postgres store: %s: status %q is not approved, rejected or settled", what, p.Status)
	}
	var a *store.Approval
	err := bumping(ctx, false, func() (err error) {
		a, err = scanApproval(s.db.QueryRowContext(ctx, `
		WITH a AS (
			UPDATE rein_approvals a SET status = $3, output = $4, comment = $5, decided_by = $6, decided_at = coalesce($7::timestamptz, now())
			WHERE (a.run_id, a.id) = (
				SELECT run_id, id FROM rein_approvals
				WHERE run_id = $1 AND step_id = $2 AND status = 'pending'
				ORDER BY ord DESC LIMIT 1 FOR UPDATE)
			AND a.status = 'pending'
			AND EXISTS (SELECT 1 FROM rein_runs WHERE id = $1 AND status NOT IN ('succeeded', 'failed', 'cancelled'))
			RETURNING a.*),
		u AS (
			UPDATE rein_runs SET updated_at = coalesce($7::timestamptz, now()),
				status = CASE WHEN status = 'waiting' AND NOT EXISTS (
					SELECT 1 FROM rein_approvals p WHERE p.run_id = $1 AND p.status = 'pending'
					AND p.id NOT IN (SELECT id FROM a)) THEN 'pending' ELSE status END
			WHERE id = $1 AND EXISTS (SELECT 1 FROM a)
			RETURNING id),
		`+bumpSQL("$7")+`
		SELECT `+approvalCols+` FROM a`,
			p.RunID, p.StepID, string(p.Status), bytesOrNil(p.Output), p.Comment, p.DecidedBy, timeOrNil(p.Now)))
		return err
	})
	if err == nil {
		return a, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, mapErr(what, err)
	}
	var runStatus string
	err = again(ctx, true, func() error {
		return s.db.QueryRowContext(ctx, `SELECT status FROM rein_runs WHERE id = $1`, p.RunID).Scan(&runStatus)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return nil, mapErr(what, err)
	}
	if (&store.Run{Status: trace.RunStatus(runStatus)}).Finished() {
		return nil, fmt.Errorf("%s: the run is %s, its approvals are closed: %w", what, runStatus, store.ErrConflict)
	}
	var decided string
	err = again(ctx, true, func() error {
		return s.db.QueryRowContext(ctx, `SELECT status FROM rein_approvals WHERE run_id = $1 AND step_id = $2
		ORDER BY ord DESC LIMIT 1`, p.RunID, p.StepID).Scan(&decided)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s: no approval is pending for the step: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return nil, mapErr(what, err)
	}
	return nil, fmt.Errorf("%s: already %s: %w", what, decided, store.ErrConflict)
}

// addApproval adds a transition's pending approval to its commit; one
// without an ID gets a random one (written back to a).
func addApproval(p *commitPlan, a *store.Approval) error {
	if a == nil || a.StepID == "" {
		return errors.New("approval without a StepID")
	}
	if a.ID == "" {
		a.ID = uuid.NewString()
	}
	created := timeOrNil(a.CreatedAt)
	if created == nil {
		created = p.now
	}
	p.addAfter(approvalSQL, a.ID, a.StepID, string(a.Kind), string(store.ApprovalPending),
		a.Tool, bytesOrNil(a.Args), a.Message, bytesOrNil(a.Output), a.Comment, a.DecidedBy,
		created, timeOrNil(a.DecidedAt))
	p.approvals++
	return nil
}
