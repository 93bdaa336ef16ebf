package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

const approvalCols = `id, run_id, step_id, kind, status, tool, args, message, output, comment, decided_by, created_at, decided_at`

func scanApproval(row scanner) (*store.Approval, error) {
	var (
		a                store.Approval
		args, output     []byte
		created, decided sql.NullInt64
	)
	if err := row.Scan(&a.ID, &a.RunID, &a.StepID, &a.Kind, &a.Status, &a.Tool, &args, &a.Message, &output,
		&a.Comment, &a.DecidedBy, &created, &decided); err != nil {
		return nil, err
	}
	a.Args, a.Output = args, output
	a.CreatedAt, a.DecidedAt = fromNanos(created), fromNanos(decided)
	return &a, nil
}

// Approvals lists approvals in the order they were created, of one run or
// (p.RunID empty) of every run, with status p.Status (all when empty).
func (s *Store) Approvals(ctx context.Context, p *store.ListApprovalsParams) (_ []*store.Approval, err error) {
	defer s.seen(&err)
	if p == nil {
		p = &store.ListApprovalsParams{}
	}
	var (
		where []string
		args  []any
	)
	if p.RunID != "" {
		where, args = append(where, "run_id = ?"), append(args, p.RunID)
	}
	if p.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(p.Status))
	}
	q := `SELECT ` + approvalCols + ` FROM approvals`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return queryAll(ctx, s.reads, "approvals", scanApproval, q+" ORDER BY seq", args...)
}

// DecideApproval settles the pending approval of a step and bumps the run's
// version: store.ErrNotFound when the step has no approval, store.ErrConflict
// when it has none pending (already decided).
func (s *Store) DecideApproval(ctx context.Context, p *store.DecideApprovalParams) (_ *store.Approval, err error) {
	defer s.seen(&err)
	switch p.Status {
	case store.ApprovalApproved, store.ApprovalRejected, store.ApprovalSettled:
	default:
		return nil, fmt.Errorf("sqlite: decide approval of step %s in run %s: status %q: want approved, rejected or settled", p.StepID, p.RunID, p.Status)
	}
	var out *store.Approval
	err = s.w.write(ctx, func(x *wtx) error {
		out = nil
		// the run's version is computed from its journal: the rows queued
		// go in first.
		if err := x.flush(); err != nil {
			return err
		}
		var status string
		err := x.queryRow(`SELECT status FROM runs WHERE id = ?`, p.RunID).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return clean(store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if (&store.Run{Status: trace.RunStatus(status)}).Finished() {
			return clean(fmt.Errorf("the run is %s, its approvals are closed: %w", status, store.ErrConflict))
		}
		var seq int64
		err = x.queryRow(`SELECT seq FROM approvals WHERE run_id = ? AND step_id = ? AND status = 'pending' ORDER BY seq LIMIT 1`,
			p.RunID, p.StepID).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			var any bool
			if err := x.queryRow(`SELECT EXISTS (SELECT 1 FROM approvals WHERE run_id = ? AND step_id = ?)`, p.RunID, p.StepID).Scan(&any); err != nil {
				return err
			}
			if any {
				return clean(fmt.Errorf("already decided: %w", store.ErrConflict))
			}
			return clean(store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		now := nowOr(p.Now).UnixNano()
		a, err := scanApproval(x.queryRow(`UPDATE approvals SET status = ?, output = ?, comment = ?, decided_by = ?, decided_at = ?
			WHERE seq = ? RETURNING `+approvalCols, string(p.Status), nullBytes(p.Output), p.Comment, p.DecidedBy, now, seq))
		if err != nil {
			return err
		}
		var rk int64
		if err := x.queryRow(`UPDATE runs SET version = `+headVersion("runs.rk", "runs.version")+` + 1, updated_at = ?1,
			status = CASE WHEN status = 'waiting' AND NOT EXISTS (SELECT 1 FROM approvals WHERE run_id = ?2 AND status = 'pending')
				THEN 'pending' ELSE status END
			WHERE id = ?2 RETURNING rk`, now, p.RunID).Scan(&rk); err != nil {
			return err
		}
		x.forget(rk)
		out = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: decide approval of step %s in run %s: %w", p.StepID, p.RunID, err)
	}
	return out, nil
}

// insertApproval inserts a pending approval (a.RunID set).
func insertApproval(x *wtx, a *store.Approval) error {
	if _, err := x.exec(stmtSQL[stInsertApproval], a.RunID, a.ID, a.StepID, string(a.Kind), string(a.Status),
		a.Tool, nullBytes(a.Args), a.Message, nullBytes(a.Output), a.Comment, a.DecidedBy,
		a.CreatedAt.UnixNano(), nanos(a.DecidedAt)); err != nil {
		return fmt.Errorf("insert approval %s: %w", a.ID, mapErr(err))
	}
	return nil
}

// closeApprovals settles a finished run's pending approvals with reason
// as their comment, at now (Unix ns).
func closeApprovals(x *wtx, runID, reason string, now int64) error {
	if _, err := x.exec(stmtSQL[stCloseApprovals], reason, now, runID); err != nil {
		return fmt.Errorf("close the run's pending approvals: %w", err)
	}
	return nil
}
