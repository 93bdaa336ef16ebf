//go:build temporalserver

package servertest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/reinhq/rein/temporal"
)

// TestRunsCommands: rein runs show|list|cancel --temporal (the
// rein-temporal program, built here) against a real server: show prints a
// waiting run's steps, what it waits on and what may be done; list finds
// it by flow, status and tenant; cancel ends it cancelled (its workflow
// Canceled, the pay step never run); show then reads the closed run's
// Status, list finds it cancelled, and a second cancel fails.
// REIN_UPDATE_HISTORIES=1 records the run's history (run-cmds.json).
func TestRunsCommands(t *testing.T) {
	ts := server(t)
	c := ts.GetDefaultClient()
	ctx := context.Background()
	ns := ts.GetDefaultNamespace()
	if err := temporal.RegisterSearchAttributes(ctx, c, ns); err != nil {
		t.Fatal(err)
	}
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	ts.NewWorkerWithOptions(queue, register(l.flows(t, false)), workerOptions)
	prog := program(t)
	conn := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ns}
	run := commander(t, prog, conn, nil)
	const id = "run-cmds"
	if _, err := temporal.StartRun(ctx, c, load(t, "approve", l), map[string]any{"n": 3}, temporal.StartOptions{RunID: id, TaskQueue: queue, Tenant: "acme", Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	if st := follow(t, c, id); st.Status != "waiting" {
		t.Fatalf("run: %+v", st)
	}

	code, out, errs := run("runs", "show", id)
	for _, want := range []string{"run " + id + "\n", "status     waiting", "workflow   Running", "draft", "succeeded", "attempts=1",
		"waits on:\n  step sign (approval)\n", "rein runs approve " + id + " sign --temporal"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("rein runs show: exit %d, no %q in\n%s\n%s", code, want, out, errs)
		}
	}
	code, out, errs = run("runs", "show", id, "-o", "json")
	var v temporal.RunView
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Status == nil || v.Status.Status != "waiting" ||
		len(v.Pending) != 1 || v.Pending[0].Step != "sign" || len(v.NextActions) == 0 {
		t.Fatalf("rein runs show -o json: exit %d\n%s\n%s", code, out, errs)
	}
	listedBy := func(want string, args ...string) {
		t.Helper()
		waitFor(t, func() bool {
			code, out, _ := run(append([]string{"runs", "list"}, args...)...)
			return code == 0 && strings.Contains(out, want)
		})
	}
	listedBy(id+"  approve  waiting", "--flow", "approve", "--status", "waiting", "--tenant", "acme")
	if code, out, errs := run("runs", "list", "--tenant", "nobody"); code != 0 || out != "" || !strings.Contains(errs, "no runs") {
		t.Errorf("rein runs list of no runs: exit %d\n%s\n%s", code, out, errs)
	}

	code, out, errs = run("runs", "cancel", id)
	if code != 0 || out != "run "+id+" cancelled\n" {
		t.Fatalf("rein runs cancel: exit %d\n%s\n%s", code, out, errs)
	}
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil || d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
		t.Fatalf("the cancelled run's workflow: %v %v", d.GetWorkflowExecutionInfo().GetStatus(), err)
	}
	if st := follow(t, c, id); st.Status != "cancelled" {
		t.Errorf("follow after the cancel: %+v", st)
	}
	if n := len(l.lines("pay")); n != 0 {
		t.Errorf("pay ran %d times", n)
	}
	code, out, errs = run("runs", "show", id)
	if code != 0 || !strings.Contains(out, "status     cancelled") || !strings.Contains(out, "workflow   Canceled") || strings.Contains(out, "waits on:") {
		t.Errorf("rein runs show of the cancelled run: exit %d\n%s\n%s", code, out, errs)
	}
	listedBy(id+"  approve  cancelled", "--status", "cancelled")
	if code, _, errs := run("runs", "cancel", id); code != 1 || !strings.Contains(errs, "run "+id+": its workflow already closed (Canceled)") {
		t.Errorf("a second cancel: exit %d\n%s", code, errs)
	}
	saveHistory(t, c, id) // a cancelled run's history, replayed by TestReplayHistories
}
