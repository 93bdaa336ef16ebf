//go:build temporalserver

package servertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/temporal"
	"github.com/reinhq/rein/tool"
)

// TestAgentEndToEnd: an agent step on a real server, turn by turn: each
// model turn and each tool call is an activity of the run's workflow (the
// calls' ids their idempotency keys), the call that needs approval parks
// the run on agent/turn2/call1, the update approves it, it runs once with
// its key, and the agent answers.
func TestAgentEndToEnd(t *testing.T) {
	ts := server(t)
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	ts.NewWorkerWithOptions(queue, register(l.flows(t, false)), workerOptions)
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

// checked gives t a check: that finds its calls in the ledger by
// idempotency key (happened, with {"found": key}).
func (l *ledger) checked(t tool.Tool) tool.Tool {
	name := t.Spec().Name
	return tool.WithCheck(t, func(_ context.Context, req tool.CheckRequest) (tool.CheckResult, error) {
		for _, ln := range l.lines(name) {
			if strings.HasPrefix(ln, req.IdempotencyKey+" ") {
				return tool.CheckResult{Happened: true, Output: map[string]any{"found": req.IdempotencyKey}}, nil
			}
		}
		return tool.CheckResult{}, nil
	})
}

// TestAgentWorkerKilled: the worker running an agent's call that is not
// safe to repeat is killed (SIGKILL) mid-call. The other worker takes the
// call over as lost: its tool's check: finds it took effect, so it is
// neither run again nor left to a person, and the agent answers.
func TestAgentWorkerKilled(t *testing.T) {
	ts := server(t)
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	child := exec.Command(os.Args[0], "-test.run=^TestChildWorker$", "-test.v")
	child.Env = append(os.Environ(), "REIN_CHILD_HOSTPORT="+ts.GetFrontendHostPort(), "REIN_CHILD_NAMESPACE="+ts.GetDefaultNamespace(), "REIN_CHILD_LEDGER="+l.path)
	var out strings.Builder
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	c := ts.GetDefaultClient()
	ctx := context.Background()
	if _, err := temporal.StartRun(ctx, c, load(t, "agentkill", l), map[string]any{"task": "refund order 1"}, temporal.StartOptions{RunID: "run-agentkill", TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(l.lines("slow_refund")) == 1 })
	ts.NewWorkerWithOptions(queue, register(l.flows(t, false)), workerOptions)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	st := follow(t, c, "run-agentkill")
	if st.Status != "succeeded" || string(st.Outputs["agent"]) != `"refunded"` {
		t.Fatalf("run: %+v %+v\nchild: %s", st, st.Error, out.String())
	}
	if got := l.lines("slow_refund"); len(got) != 1 || !strings.HasPrefix(got[0], "run-agentkill/agent/1/turn1/call1 ") {
		t.Errorf("slow_refund executions %v: want one, with the call's key", got)
	}
	saveHistory(t, c, "run-agentkill")
}
