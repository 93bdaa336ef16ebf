//go:build temporalserver

package servertest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/worker"

	"github.com/reinhq/rein/temporal"
)

// TestContinueAsNewEndToEnd: on a real server, with a low threshold
// (Workflow.ContinueAsNewAfter: 8 events), the approval flow's run
// continues as new several times, at the points where nothing is in
// flight, and still waits for its decisions, takes them through the
// updates of the run that holds it now (same workflow id), runs its
// non-idempotent call once, and succeeds.
func TestContinueAsNewEndToEnd(t *testing.T) {
	ts := server(t)
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	fs := l.flows(t, false)
	ts.NewWorkerWithOptions(queue, func(r worker.Registry) {
		temporal.Register(r, &temporal.Workflow{Flows: fs, Heartbeat: beat, ContinueAsNewAfter: 8}, &temporal.Activities{Flows: fs, Heartbeat: beat})
	}, workerOptions)
	c := ts.GetDefaultClient()
	ctx := context.Background()
	const id = "run-can"
	if _, err := temporal.StartRun(ctx, c, load(t, "approve", l), map[string]any{"n": 3}, temporal.StartOptions{RunID: id, TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"sign", "pay"} {
		var pend []temporal.Pending
		waitFor(t, func() bool {
			pend = nil
			return temporal.Query(ctx, c, id, temporal.QueryPending, &pend) == nil && len(pend) == 1 && pend[0].Step == step
		})
		if err := temporal.Decide(ctx, c, id, temporal.Decision{Step: step, Action: temporal.ActionApprove, By: "ana"}); err != nil {
			t.Fatalf("approve %s: %v", step, err)
		}
	}
	st := follow(t, c, id)
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := l.lines("pay"); len(got) != 1 || !strings.HasPrefix(got[0], id+"/pay/1 ") {
		t.Errorf("pay executions %v, want one with key %s/pay/1", got, id)
	}
	if got := l.lines("ok"); len(got) != 2 {
		t.Errorf("ok executions %v, want draft and notify once each", got)
	}
	var runs int
	waitFor(t, func() bool {
		res, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ts.GetDefaultNamespace(), Query: "WorkflowId = '" + id + "'"})
		runs = len(res.GetExecutions())
		return err == nil && runs >= 2
	})
	t.Logf("the run took %d workflow runs", runs)
}
