//go:build temporalserver

package servertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
)

const retryFlow = `name: retry-e2e
steps:
  - {id: fetch, tool: ok, args: {}}
  - {id: charge, tool: charge_once, args: {}, requires: [fetch]}
`

// TestRetryEndToEnd: on a real server a failed run's workflow closes at
// once (Temporal status Failed); a retry the run cannot take starts an
// execution that closes failed again with the same state, nothing run;
// rein runs retry's RetryRun starts a new execution of the same workflow
// id from the carried state: fetch (which succeeded) does not run again,
// charge runs at attempt 2 (a new key), the run succeeds; a succeeded run
// is not retried.
func TestRetryEndToEnd(t *testing.T) {
	ts := server(t)
	c := ts.GetDefaultClient()
	ctx := context.Background()
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(retryFlow), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := project.Load(dir, &project.LoadOptions{Tools: append(l.tools(false), l.chargeOnce())})
	if err != nil {
		t.Fatal(err)
	}
	fs := temporal.NewFlows()
	fs.Add(p)
	ts.NewWorkerWithOptions(queue, register(fs), workerOptions)
	const id = "run-retry"
	if _, err := temporal.StartRun(ctx, c, p, map[string]any{}, temporal.StartOptions{RunID: id, TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	if st := follow(t, c, id); st.Status != "failed" || st.Error == nil || st.Error.Step != "charge" {
		t.Fatalf("run: %+v", st)
	}
	status := func() enumspb.WorkflowExecutionStatus {
		t.Helper()
		var s enumspb.WorkflowExecutionStatus
		waitFor(t, func() bool {
			d, err := c.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				return false
			}
			s = d.WorkflowExecutionInfo.Status
			return s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		})
		return s
	}
	if s := status(); s != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
		t.Fatalf("the failed run's workflow is %s, want Failed", s)
	}
	// the closed workflow takes no update: what may be done is the retry
	// as a new execution, from the query (answered on the closed
	// workflow) as from rein runs show.
	var next []temporal.NextAction
	if err := temporal.Query(ctx, c, id, temporal.QueryNextActions, &next); err != nil {
		t.Fatal(err)
	}
	v, err := temporal.ShowRun(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, acts := range [][]temporal.NextAction{next, v.NextActions} {
		if len(acts) != 1 || acts[0].Update != "" || acts[0].Action != temporal.ActionRetry || acts[0].Command != "rein runs retry "+id {
			t.Errorf("next actions of the closed failed run %+v, want only rein runs retry %s (no update)", acts, id)
		}
	}

	if err := temporal.RetryRun(ctx, c, id, temporal.Decision{Step: "nope"}); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
		t.Fatalf("after a refused retry the workflow is %s", s)
	}
	gerr := c.GetWorkflow(ctx, id, "").Get(ctx, nil)
	if cl, ok := temporal.ClosedOf(gerr); !ok || !strings.Contains(gerr.Error(), "retry refused") || cl.Status.Error == nil || cl.Status.Error.Step != "charge" {
		t.Fatalf("a refused retry: %v", gerr)
	}

	if err := temporal.RetryRun(ctx, c, id, temporal.Decision{By: "ana"}); err != nil {
		t.Fatal(err)
	}
	if st := follow(t, c, id); st.Status != "succeeded" {
		t.Fatalf("run after the retry: %+v %+v", st, st.Error)
	}
	if got := strings.Join(keys(l.lines("charge_once")), " "); got != id+"/charge/1 "+id+"/charge/2" {
		t.Errorf("charges %q: the retry's attempt takes the next key", got)
	}
	if got := strings.Join(keys(l.lines("ok")), " "); got != id+"/fetch/1" {
		t.Errorf("fetch ran %q: a step that succeeded ran again", got)
	}
	if s := status(); s != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("the retried run's workflow is %s", s)
	}
	if v, err := temporal.ShowRun(ctx, c, id); err != nil || len(v.NextActions) != 0 {
		t.Errorf("next actions of the succeeded run %+v (%v), want none", v, err)
	}
	if err := temporal.RetryRun(ctx, c, id, temporal.Decision{}); err == nil || !strings.Contains(err.Error(), "not failed") {
		t.Errorf("a retry of a succeeded run: %v", err)
	}
}
