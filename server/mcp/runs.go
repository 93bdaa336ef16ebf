package mcp

import (
	"context"
	"encoding/json"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// anyObject is the output schema of the runs tools: their rows are rein's
// own, checked where they are built.
var anyObject = json.RawMessage(`{"type":"object"}`)

// RunsListArgs are runs_list's arguments.
type RunsListArgs struct {
	Status string `json:"status,omitempty"`
	Flow   string `json:"flow,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// RunsList is runs_list's answer.
type RunsList struct {
	Runs []*rein.RunRow `json:"runs"`
}

// RunsShowArgs are runs_show's arguments.
type RunsShowArgs struct {
	Run string `json:"run"`
}

// RunsTools returns the read-only tools runs_list and runs_show over runs
// (effect read): what `rein runs list` and `rein runs show --output json`
// print. Their errors are runs' *rein.Error values, classed.
func RunsTools(runs *rein.Runs) []tool.Tool {
	list := tool.Typed(tool.Spec{Name: "runs_list", Description: "List the durable runs of rein's store, newest first. Filters: status (pending, running, waiting, succeeded, failed, cancelled), flow (its name), limit (default 100).", OutputSchema: anyObject, Effect: tool.EffectRead, Idempotent: true},
		func(ctx context.Context, in RunsListArgs) (RunsList, error) {
			rows, err := runs.List(ctx, &rein.ListRunsParams{Status: trace.RunStatus(in.Status), Flow: in.Flow, Limit: in.Limit})
			if rows == nil {
				rows = []*rein.RunRow{}
			}
			return RunsList{Runs: rows}, err
		})
	show := tool.Typed(tool.Spec{Name: "runs_show", Description: "Show one run (run: an id, a unique prefix of one, or last): its row, every step (status, attempts, input, output, error) and its approvals.", OutputSchema: anyObject, Effect: tool.EffectRead, Idempotent: true},
		func(ctx context.Context, in RunsShowArgs) (*rein.RunView, error) {
			return runs.Show(ctx, in.Run)
		})
	return []tool.Tool{list, show}
}
