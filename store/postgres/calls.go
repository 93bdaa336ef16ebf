package postgres

import (
	"context"
	"time"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
)

const callCols = `run_id, key, step_id, item, round, plan, plan_step, turn, idx, fallback, attempt, kind, name,
	args_sha, status, output, error_class, error, tokens_in, tokens_out, started_at, duration_ns`

func scanCall(row scanner) (*store.Call, error) {
	var (
		c                    store.Call
		started              *time.Time
		tokIn, tokOut, durNS int64
	)
	if err := row.Scan(&c.RunID, &c.Key, &c.StepID, &c.Item, &c.Round, &c.Plan, &c.PlanStep, &c.Turn, &c.Index, &c.Fallback,
		&c.Attempt, &c.Kind, &c.Name, &c.ArgsSHA, &c.Status, &c.Output, &c.ErrorClass, &c.Error, &tokIn, &tokOut,
		&started, &durNS); err != nil {
		return nil, err
	}
	c.TokensIn, c.TokensOut, c.Duration = int(tokIn), int(tokOut), time.Duration(durNS)
	if started != nil {
		c.StartedAt = started.UTC()
	}
	return &c, nil
}

// Calls returns a run's call records: the rows of rein_calls (the records
// a rein of journal version 1 kept there, in their order), then the
// records of its call events, folded by key (journal.FoldCalls); stepID,
// when not empty, keeps that step's. store.ErrNotFound when the run does
// not exist.
func (s *Store) Calls(ctx context.Context, runID, stepID string) ([]*store.Call, error) {
	what := "read calls of run " + runID
	var out []*store.Call
	err := again(ctx, true, func() error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, `SELECT `+callCols+` FROM rein_calls
		WHERE run_id = $1 AND ($2 = '' OR step_id = $2) ORDER BY ord`, runID, stepID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanCall(rows)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, mapErr(what, err)
	}
	events, err := s.Events(ctx, runID, 0, 0)
	if err != nil {
		return nil, err
	}
	if out = journal.FoldCalls(out, events, stepID); len(out) == 0 {
		return nil, s.runExists(ctx, what, runID)
	}
	return out, nil
}
