package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/store"
)

// callSQL upserts a call record ($4 …) after a commit's journal row, only
// if that row was inserted (appliedSQL); a record committed again under its
// key keeps its ord (its place).
const callSQL = `INSERT INTO rein_calls (run_id, key, step_id, item, round, plan, plan_step, turn, idx, fallback,
		attempt, kind, name, args_sha, status, output, error_class, error, tokens_in, tokens_out, started_at, duration_ns)
	SELECT $1::text, $4::text, $5::text, $6::int, $7::int, $8::int, $9::text, $10::int, $11::int, $12::boolean,
		$13::int, $14::text, $15::text, $16::text, $17::text, $18::bytea, $19::text, $20::text, $21::bigint, $22::bigint,
		$23::timestamptz, $24::bigint
	WHERE ` + appliedSQL + `
	ON CONFLICT (run_id, key) DO UPDATE SET step_id = excluded.step_id, item = excluded.item, round = excluded.round,
		plan = excluded.plan, plan_step = excluded.plan_step, turn = excluded.turn, idx = excluded.idx,
		fallback = excluded.fallback, attempt = excluded.attempt, kind = excluded.kind, name = excluded.name,
		args_sha = excluded.args_sha, status = excluded.status, output = excluded.output,
		error_class = excluded.error_class, error = excluded.error, tokens_in = excluded.tokens_in,
		tokens_out = excluded.tokens_out, started_at = excluded.started_at, duration_ns = excluded.duration_ns`

// addCall adds a transition's call record to its commit.
func addCall(p *commitPlan, c *store.Call) error {
	if c == nil || c.Key == "" || c.StepID == "" {
		return errors.New("call record without a key or a step")
	}
	p.addAfter(callSQL, callArgs(c)...)
	return nil
}

// callArgs are callSQL's parameters from $4 on.
func callArgs(c *store.Call) []any {
	return []any{c.Key, c.StepID, c.Item, c.Round, c.Plan, c.PlanStep, c.Turn, c.Index, c.Fallback, c.Attempt,
		string(c.Kind), c.Name, c.ArgsSHA, string(c.Status), bytesOrNil(c.Output), c.ErrorClass, c.Error,
		int64(c.TokensIn), int64(c.TokensOut), timeOrNil(c.StartedAt), int64(c.Duration)}
}

const callCols = `run_id, key, step_id, item, round, plan, plan_step, turn, idx, fallback, attempt, kind, name,
	args_sha, status, output, error_class, error, tokens_in, tokens_out, started_at, duration_ns`

func scanCall(row pgx.Row) (*store.Call, error) {
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

// Calls returns a run's call records, one per key, in the order their keys
// were first committed; stepID, when not empty, keeps that step's.
// store.ErrNotFound when the run does not exist.
func (s *Store) Calls(ctx context.Context, runID, stepID string) ([]*store.Call, error) {
	what := "read calls of run " + runID
	var out []*store.Call
	err := again(ctx, true, func() error {
		out = out[:0]
		rows, err := s.pool.Query(ctx, `SELECT `+callCols+` FROM rein_calls
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
	if len(out) == 0 {
		return nil, s.runExists(ctx, what, runID)
	}
	return out, nil
}
