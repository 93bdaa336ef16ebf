//go:build temporalserver

package servertest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
	"github.com/reinhq/rein/tool"
)

// sagaTools are the saga flow's tools: charge (compensated by refund),
// refund (declined the first time), ship (always fails).
func (l *ledger) sagaTools() []tool.Tool {
	charge := tool.Spec{Name: "charge", Effect: tool.EffectExternal, Reversibility: tool.Compensatable,
		Compensate: &tool.Compensation{Tool: "refund", Args: map[string]any{"amount": "{args.amount}"}}}
	return []tool.Tool{
		tool.Func(charge, func(ctx context.Context, args any) (any, error) {
			l.add("charge", tool.CallInfoFrom(ctx).IdempotencyKey)
			return map[string]any{"charged": args}, nil
		}),
		tool.Func(tool.Spec{Name: "refund", Effect: tool.EffectExternal, Idempotent: true}, func(ctx context.Context, args any) (any, error) {
			first := len(l.lines("refund")) == 0
			l.add("refund", tool.CallInfoFrom(ctx).IdempotencyKey)
			if first {
				return nil, fault.Errorf(fault.Business, "refund: declined the first time")
			}
			return map[string]any{"refunded": args}, nil
		}),
		tool.Func(tool.Spec{Name: "ship", Effect: tool.EffectWrite, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
			l.add("ship", tool.CallInfoFrom(ctx).IdempotencyKey)
			return nil, fault.Errorf(fault.Business, "ship: no carrier")
		}),
	}
}

// TestSagaEndToEnd: on a real server, a run with on_failure: compensate
// fails at ship; its charge's refund (activity compensate:take, id
// run-saga/take/1/compensate) is declined, which waits for a person as
// the escalation take/1/compensate; approved, the refund is made once
// more, with the same key, and the run ends failed.
func TestSagaEndToEnd(t *testing.T) {
	ts := server(t)
	c := ts.GetDefaultClient()
	ctx := context.Background()
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	p, err := project.Load(filepath.Join("..", "testdata", "flows", "saga"), &project.LoadOptions{Tools: l.sagaTools()})
	if err != nil {
		t.Fatal(err)
	}
	fs := temporal.NewFlows()
	fs.Add(p)
	// the run closes as it fails (no retry window): its history is whole.
	ts.NewWorkerWithOptions(queue, func(r worker.Registry) {
		temporal.Register(r, &temporal.Workflow{Flows: fs, Heartbeat: beat, RetryWindow: -1}, &temporal.Activities{Flows: fs, Heartbeat: beat})
	}, workerOptions)
	const id = "run-saga"
	if _, err := temporal.StartRun(ctx, c, p, map[string]any{}, temporal.StartOptions{RunID: id, TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	if st := follow(t, c, id); st.Status != "waiting" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	v, err := c.QueryWorkflow(ctx, id, "", temporal.QueryPending)
	if err != nil {
		t.Fatal(err)
	}
	var pend []temporal.Pending
	if err := v.Get(&pend); err != nil {
		t.Fatal(err)
	}
	if len(pend) != 1 || pend[0].Step != "take/1/compensate" || pend[0].Kind != "escalation" || !strings.Contains(pend[0].Error, "declined") {
		t.Fatalf("pending %+v", pend)
	}
	if err := temporal.Update(ctx, c, id, temporal.UpdateDecide, temporal.Decision{Step: "take/1/compensate", Action: "maybe"}); err == nil {
		t.Error("an unknown action was taken")
	}
	if err := temporal.Update(ctx, c, id, temporal.UpdateDecide, temporal.Decision{Step: "take/1/compensate", Action: temporal.ActionApprove, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	st := follow(t, c, id)
	if st.Status != "failed" || st.Error == nil || st.Error.Step != "ship" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := strings.Join(keys(l.lines("refund")), " "); got != id+"/take/1/compensate "+id+"/take/1/compensate" {
		t.Errorf("refunds %q: declined, then made once more with the same key", got)
	}
	if got := len(l.lines("charge")); got != 1 {
		t.Errorf("charge made %d times", got)
	}
	saveHistory(t, c, id)
}
