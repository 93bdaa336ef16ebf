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

	"go.temporal.io/api/workflowservice/v1"

	"github.com/reinhq/rein/temporal"
)

// TestPlanWorkerKilled: the worker running a plan step is killed
// (SIGKILL) while its second plan step's call (slow_charge, not safe to
// repeat) is in flight, once the server holds a heartbeat saying so. The
// other worker takes the step over from the plan that heartbeat carried:
// it waits for a person, told which call was in flight; approved, the
// plan goes on (the planner is not asked again: its script has one plan),
// pay is not made again and slow_charge is made again with its key.
func TestPlanWorkerKilled(t *testing.T) {
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
	if _, err := temporal.StartRun(ctx, c, load(t, "plankill", l), map[string]any{}, temporal.StartOptions{RunID: "run-plankill", TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { // the server holds the heartbeat naming the call in flight
		d, err := c.DescribeWorkflowExecution(ctx, "run-plankill", "")
		return err == nil && inFlight(d, "second")
	})
	ts.NewWorkerWithOptions(queue, register(l.flows(t, false)), workerOptions)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	st := follow(t, c, "run-plankill")
	if st.Status != "waiting" {
		t.Fatalf("run: %+v %+v\nchild: %s", st, st.Error, out.String())
	}
	var pend []temporal.Pending
	if err := temporal.Query(ctx, c, "run-plankill", temporal.QueryPending, &pend); err != nil || len(pend) != 1 || pend[0].Step != "plan" || pend[0].Kind != "unknown" ||
		!strings.Contains(pend[0].Error, "plan step second of plan 1 (tool slow_charge") {
		t.Fatalf("pending %+v (%v)", pend, err)
	}
	if err := temporal.Decide(ctx, c, "run-plankill", temporal.Decision{Step: "plan", Action: temporal.ActionApprove, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	if st := follow(t, c, "run-plankill"); st.Status != "succeeded" {
		t.Fatalf("run after approve: %+v %+v", st, st.Error)
	}
	if pay := l.lines("pay"); len(pay) != 1 {
		t.Errorf("pay executions %v: a succeeded plan step was made again", pay)
	}
	charge := l.lines("slow_charge")
	if len(charge) != 2 || !strings.HasPrefix(charge[0], "run-plankill/plan/1/plan1/second") || strings.Fields(charge[0])[0] != strings.Fields(charge[1])[0] {
		t.Errorf("slow_charge executions %v: want the call in flight made again with its key", charge)
	}
	saveHistory(t, c, "run-plankill")
}

// inFlight reports whether d's pending activity's heartbeat details name
// plan step id's call in flight.
func inFlight(d *workflowservice.DescribeWorkflowExecutionResponse, id string) bool {
	for _, pa := range d.GetPendingActivities() {
		for _, p := range pa.GetHeartbeatDetails().GetPayloads() {
			if strings.Contains(string(p.GetData()), `"plan_step":"`+id+`"`) {
				return true
			}
		}
	}
	return false
}
