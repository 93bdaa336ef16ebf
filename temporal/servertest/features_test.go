//go:build temporalserver

package servertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
	"github.com/reinhq/rein/tool"
)

// chargeOnce is a tool that fails (business) on its first call and
// answers after: a run of it fails, and a retry gets it through.
func (l *ledger) chargeOnce() tool.Tool {
	return tool.Func(tool.Spec{Name: "charge_once", Effect: tool.EffectWrite}, func(ctx context.Context, args any) (any, error) {
		first := len(l.lines("charge_once")) == 0
		l.add("charge_once", tool.CallInfoFrom(ctx).IdempotencyKey)
		if first {
			return nil, fault.Errorf(fault.Business, "charge_once: declined the first time")
		}
		return map[string]any{"charged": args}, nil
	})
}

// TestFlowFeaturesEndToEnd: on a real server with rein's search
// attributes registered (as rein worker does), a run waits for an agent's
// submission (update submit; its validator refuses an output that breaks
// the step's schema), runs a repeat step's rounds as activities, fails on
// a declined charge and closes (Failed); Temporal lists it by ReinFlow,
// ReinStatus and ReinTenant; a retry it cannot take closes again, listed
// failed; a retry starts it again (a new execution of
// the same id, RetryRun), the charge runs at attempt 2 (a new key) and the
// run succeeds, listed so. (The committed run-features.json was recorded
// before rein-retry-closed: there the update retry re-opened the run.)
func TestFlowFeaturesEndToEnd(t *testing.T) {
	ts := server(t)
	c := ts.GetDefaultClient()
	ctx := context.Background()
	ns := ts.GetDefaultNamespace()
	if err := temporal.RegisterSearchAttributes(ctx, c, ns); err != nil {
		t.Fatal(err)
	}
	if err := temporal.RegisterSearchAttributes(ctx, c, ns); err != nil {
		t.Fatalf("a second registration: %v", err)
	}
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	p, err := project.Load(filepath.Join("..", "testdata", "flows", "features"), &project.LoadOptions{Tools: append(l.tools(false), l.chargeOnce())})
	if err != nil {
		t.Fatal(err)
	}
	fs := temporal.NewFlows()
	fs.Add(p)
	ts.NewWorkerWithOptions(queue, register(fs), workerOptions)
	const id = "run-features"
	if _, err := temporal.StartRun(ctx, c, p, map[string]any{}, temporal.StartOptions{RunID: id, TaskQueue: queue, Tenant: "acme", Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	if st := follow(t, c, id); st.Status != "waiting" {
		t.Fatalf("run: %+v", st)
	}
	listed(t, c, ns, `ReinFlow = 'features' AND ReinStatus = 'waiting' AND ReinTenant = 'acme'`, id)
	err = temporal.Update(ctx, c, id, temporal.UpdateSubmit, temporal.Decision{Step: "parse", Output: json.RawMessage(`{"total":"ten"}`)})
	if err == nil || !strings.Contains(err.Error(), "total") {
		t.Fatalf("a submission that breaks the schema: %v", err)
	}
	if err := temporal.Update(ctx, c, id, temporal.UpdateSubmit, temporal.Decision{Step: "parse", Output: json.RawMessage(`{"total":10}`)}); err != nil {
		t.Fatal(err)
	}
	st := follow(t, c, id)
	if st.Status != "failed" || st.Error == nil || st.Error.Step != "charge" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := strings.Join(keys(l.lines("ok")), " "); got != id+"/loop#1/1 "+id+"/loop#2/1 "+id+"/loop#3/1" {
		t.Errorf("rounds %q", got)
	}
	listed(t, c, ns, `ReinFlow = 'features' AND ReinStatus = 'failed'`, id)
	// the failed run's workflow closed (Failed); the retry starts it again.
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil || d.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
		t.Fatalf("the failed run's workflow: %v %v", d.GetWorkflowExecutionInfo().GetStatus(), err)
	}
	// a retry the run cannot take: its execution closes failed at once,
	// listed so (not as the running its start set).
	first := d.WorkflowExecutionInfo.Execution.RunId
	if err := temporal.RetryRun(ctx, c, id, temporal.Decision{Step: "nope"}); err != nil {
		t.Fatal(err)
	}
	var refused string
	waitFor(t, func() bool {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return false
		}
		refused = d.WorkflowExecutionInfo.Execution.RunId
		return refused != first && d.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_FAILED
	})
	listed(t, c, ns, fmt.Sprintf(`RunId = '%s' AND ReinStatus = 'failed' AND ReinTenant = 'acme'`, refused), id)
	if err := temporal.RetryRun(ctx, c, id, temporal.Decision{By: "ana"}); err != nil {
		t.Fatal(err)
	}
	if st = follow(t, c, id); st.Status != "succeeded" {
		t.Fatalf("run after the retry: %+v %+v", st, st.Error)
	}
	if got := strings.Join(keys(l.lines("charge_once")), " "); got != id+"/charge/1 "+id+"/charge/2" {
		t.Errorf("charges %q", got)
	}
	listed(t, c, ns, `ReinStatus = 'succeeded' AND ReinTenant = 'acme'`, id)
	saveHistory(t, c, id)
}

// keys are the keys of ledger lines ("key pid").
func keys(lines []string) []string {
	out := make([]string, len(lines))
	for i, ln := range lines {
		out[i], _, _ = strings.Cut(ln, " ")
	}
	return out
}

// listed waits until the visibility query lists run id alone.
func listed(t *testing.T, c interface {
	ListWorkflow(context.Context, *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
}, ns, query, id string) {
	t.Helper()
	var got []string
	waitFor(t, func() bool {
		res, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: query})
		if err != nil {
			fmt.Fprintln(os.Stderr, "list:", err)
			return false
		}
		got = got[:0]
		for _, e := range res.Executions {
			got = append(got, e.Execution.WorkflowId)
		}
		return len(got) == 1 && got[0] == id
	})
}
