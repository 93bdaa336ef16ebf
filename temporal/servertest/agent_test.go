//go:build temporalserver

package servertest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"

	"github.com/reinhq/rein/temporal"
)

// TestAgentEndToEnd: an agent step on a real server, turn by turn: each
// model turn and each tool call is an activity of the run's workflow (the
// calls' ids their idempotency keys), the call that needs approval parks
// the run on agent/turn2/call1, the update approves it, it runs once with
// its key, and the agent answers.
func TestAgentEndToEnd(t *testing.T) {
	ts := server(t)
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	ts.NewWorkerWithOptions(queue, register(l.flows(t, false)), worker.Options{})
	c := ts.GetDefaultClient()
	ctx := context.Background()
	p := load(t, "agent", l)
	if _, err := temporal.StartRun(ctx, c, p, map[string]any{"task": "pay 5"}, temporal.StartOptions{RunID: "run-agent", TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	if st := follow(t, c, "run-agent"); st.Status != "waiting" {
		t.Fatalf("run: %+v", st)
	}
	var pend []temporal.Pending
	if err := temporal.Query(ctx, c, "run-agent", temporal.QueryPending, &pend); err != nil || len(pend) != 1 || pend[0].Step != "agent/turn2/call1" {
		t.Fatalf("pending %+v (%v)", pend, err)
	}
	if got := l.lines("pay"); len(got) != 0 {
		t.Fatalf("pay ran before its approval: %v", got)
	}
	if err := temporal.Decide(ctx, c, "run-agent", temporal.Decision{Step: "agent/turn2/call1", Action: temporal.ActionApprove, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	st := follow(t, c, "run-agent")
	if st.Status != "succeeded" || string(st.Outputs["agent"]) != `"paid 5"` {
		t.Fatalf("run: %+v %+v, output %s", st, st.Error, st.Outputs["agent"])
	}
	if got := l.lines("pay"); len(got) != 1 || !strings.HasPrefix(got[0], "run-agent/agent/1/turn2/call1 ") {
		t.Errorf("pay executions %v, want one with key run-agent/agent/1/turn2/call1", got)
	}
	if got := l.lines("ok"); len(got) != 2 {
		t.Errorf("ok executions %v, want 2", got)
	}
	// each unit is an activity: three model turns and three calls.
	it := c.GetWorkflowHistory(ctx, "run-agent", "", false, 0)
	var types []string
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			types = append(types, a.ActivityType.GetName()+" "+a.ActivityId)
		}
	}
	want := []string{"agent:agent run-agent/agent/1/turn1", "call:ok run-agent/agent/1/turn1/call1", "call:ok run-agent/agent/1/turn1/call2",
		"agent:agent run-agent/agent/1/turn2", "call:pay run-agent/agent/1/turn2/call1", "call:pay run-agent/agent/1/turn2/call1", "agent:agent run-agent/agent/1/turn3"}
	if strings.Join(types, ",") != strings.Join(want, ",") {
		t.Errorf("activities:\n%s\nwant\n%s", strings.Join(types, "\n"), strings.Join(want, "\n"))
	}
	saveHistory(t, c, "run-agent")
}
