//go:build temporalserver

package servertest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
	"github.com/reinhq/rein/tool"
)

// TestRunTimeoutEndToEnd: on a real server, a run whose budgets.timeout
// passes while an attempt runs fails with the budget error (class budget,
// the budget and its limit in the message), the running attempt's context
// ends, and the step after never runs.
func TestRunTimeoutEndToEnd(t *testing.T) {
	ended := make(chan bool, 4)
	after := make(chan struct{}, 4)
	tools := []tool.Tool{
		tool.Func(tool.Spec{Name: "hang", Effect: tool.EffectRead, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
			select {
			case <-ctx.Done():
				ended <- true
				return nil, ctx.Err()
			case <-time.After(time.Minute): // a bound, not a timing: the test fails below
				ended <- false
				return map[string]any{}, nil
			}
		}),
		tool.Func(tool.Spec{Name: "after", Effect: tool.EffectRead, Idempotent: true}, func(context.Context, any) (any, error) {
			after <- struct{}{}
			return map[string]any{}, nil
		}),
	}
	p, err := project.Load(filepath.Join("..", "testdata", "flows", "timed"), &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	fs := temporal.NewFlows()
	fs.Add(p)
	ts := server(t)
	ts.NewWorkerWithOptions(queue, register(fs), workerOptions)
	c := ts.GetDefaultClient()
	if _, err := temporal.StartRun(context.Background(), c, p, map[string]any{}, temporal.StartOptions{RunID: "run-timed", TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	st := follow(t, c, "run-timed")
	if st.Status != "failed" || st.Error == nil || st.Error.Class != "budget" || !strings.Contains(st.Error.Message, "the run ran past its budget timeout of 2s") ||
		st.Error.Step != "" && st.Error.Step != "slow" {
		t.Fatalf("run: %s %+v", st.Status, st.Error)
	}
	if !<-ended {
		t.Error("the running attempt's context did not end")
	}
	if len(after) != 0 {
		t.Error("the step after ran")
	}
	saveHistory(t, c, "run-timed")
}
