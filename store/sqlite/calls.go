package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

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

// Calls returns a run's call records, one per key, in the order their keys
// were first committed; stepID, when not empty, keeps that step's.
// store.ErrNotFound when the run does not exist.
func (s *Store) Calls(ctx context.Context, runID, stepID string) ([]*store.Call, error) {
	q, args := `SELECT `+callCols+` FROM calls WHERE run_id = ? ORDER BY seq`, []any{runID}
	if stepID != "" {
		q, args = `SELECT `+callCols+` FROM calls WHERE run_id = ? AND step_id = ? ORDER BY seq`, []any{runID, stepID}
	}
	out, err := queryAll(ctx, s.reads, "calls of run "+runID, scanCall, q, args...)
	if err != nil || len(out) > 0 {
		return out, err
	}
	if err := s.notFoundUnlessExists(ctx, "calls", runID); err != nil {
		return nil, err
	}
	return nil, nil
}

// upsertCall writes a call record of run runID: it replaces the record
// with its key, which keeps its place in the order Calls returns.
func upsertCall(x *wtx, runID string, c *store.Call) error {
	if _, err := x.exec(stmtSQL[stUpsertCall], runID, c.Key, c.StepID, c.Item, c.Round, c.Plan, c.PlanStep,
		c.Turn, c.Index, c.Fallback, c.Attempt, string(c.Kind), c.Name, c.ArgsSHA, string(c.Status),
		nullBytes(c.Output), c.ErrorClass, c.Error, c.TokensIn, c.TokensOut, nanos(c.StartedAt), int64(c.Duration)); err != nil {
		return fmt.Errorf("record call %s: %w", c.Key, mapErr(err))
	}
	return nil
}
