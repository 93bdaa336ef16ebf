package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
)

const callCols = `run_id, key, step_id, item, round, plan, plan_step, turn, idx, fallback, attempt, kind, name,
	args_sha, status, output, error_class, error, tokens_in, tokens_out, started_at, duration`

func scanCall(row scanner) (*store.Call, error) {
	var (
		c        store.Call
		output   []byte
		started  sql.NullInt64
		duration int64
	)
	if err := row.Scan(&c.RunID, &c.Key, &c.StepID, &c.Item, &c.Round, &c.Plan, &c.PlanStep, &c.Turn, &c.Index, &c.Fallback,
		&c.Attempt, &c.Kind, &c.Name, &c.ArgsSHA, &c.Status, &output, &c.ErrorClass, &c.Error, &c.TokensIn, &c.TokensOut,
		&started, &duration); err != nil {
		return nil, err
	}
	c.Output, c.StartedAt, c.Duration = output, fromNanos(started), time.Duration(duration)
	return &c, nil
}

// Calls returns a run's call records: the rows of the calls table (the
// records a rein of journal version 1 kept there, in their order), then
// the records of its call events, folded by key (journal.FoldCalls);
// stepID, when not empty, keeps that step's. store.ErrNotFound when the
// run does not exist.
func (s *Store) Calls(ctx context.Context, runID, stepID string) (_ []*store.Call, err error) {
	defer s.seen(&err)
	q, args := `SELECT `+callCols+` FROM calls WHERE run_id = ? ORDER BY seq`, []any{runID}
	if stepID != "" {
		q, args = `SELECT `+callCols+` FROM calls WHERE run_id = ? AND step_id = ? ORDER BY seq`, []any{runID, stepID}
	}
	legacy, err := queryAll(ctx, s.reads, "calls of run "+runID, scanCall, q, args...)
	if err != nil {
		return nil, err
	}
	events, err := s.Events(ctx, runID, 0, 0)
	if err != nil {
		return nil, err
	}
	if out := journal.FoldCalls(legacy, events, stepID); len(out) > 0 {
		return out, nil
	}
	if err := s.notFoundUnlessExists(ctx, "calls", runID); err != nil {
		return nil, err
	}
	return nil, nil
}
