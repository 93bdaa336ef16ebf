package mcp

import (
	"context"
	"encoding/json"

	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// anyObject is the output schema of the runs tools: their rows are rein's
// own, checked where they are built.
var anyObject = json.RawMessage(`{"type":"object"}`)

// runsListArgs are runs_list's arguments.
type runsListArgs struct {
	Status string `json:"status,omitempty"`
	Flow   string `json:"flow,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// runsList is runs_list's answer.
type runsList struct {
	Runs []*runs.Row `json:"runs"`
}

// runsShowArgs are runs_show's arguments.
type runsShowArgs struct {
	Run string `json:"run"`
}

// runsTools returns the read-only tools runs_list and runs_show over runs
// (effect read): what `rein runs list` and `rein runs show --output json`
// print. Their errors are runs' classed *fault.Error values.
func runsTools(r *runs.Reader) []tool.Tool {
	list := tool.Typed(tool.Spec{Name: "runs_list", Description: "List the durable runs of rein's store, newest first. Filters: status (pending, running, waiting, succeeded, failed, cancelled), flow (its name), limit (default 100).", OutputSchema: anyObject, Effect: tool.EffectRead, Idempotent: true},
		func(ctx context.Context, in runsListArgs) (runsList, error) {
			rows, err := r.List(ctx, &store.ListRunsParams{Status: trace.RunStatus(in.Status), Flow: in.Flow, Limit: in.Limit})
			if rows == nil {
				rows = []*runs.Row{}
			}
			return runsList{Runs: rows}, err
		})
	show := tool.Typed(tool.Spec{Name: "runs_show", Description: "Show one run (run: an id, a unique prefix of one, or last): its row, every step (status, attempts, input, output, error) and its approvals.", OutputSchema: anyObject, Effect: tool.EffectRead, Idempotent: true},
		func(ctx context.Context, in runsShowArgs) (*runs.View, error) {
			return r.Show(ctx, in.Run)
		})
	return []tool.Tool{list, show}
}
