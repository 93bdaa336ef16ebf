//go:build temporalserver

package servertest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/reinhq/rein/temporal"
)

// TestChildWorker is the worker TestWorkerKilled starts in a process of
// its own (and kills): it runs only when REIN_CHILD_HOSTPORT is set.
func TestChildWorker(t *testing.T) {
	hp := os.Getenv("REIN_CHILD_HOSTPORT")
	if hp == "" {
		t.Skip("the child worker of TestWorkerKilled")
	}
	c, err := client.Dial(client.Options{HostPort: hp, Namespace: os.Getenv("REIN_CHILD_NAMESPACE")})
	if err != nil {
		t.Fatal(err)
	}
	l := &ledger{path: os.Getenv("REIN_CHILD_LEDGER")}
	w := worker.New(c, queue, workerOptions)
	register(l.flows(t, true))(w)
	if err := w.Run(make(chan any)); err != nil {
		t.Fatal(err)
	}
}

// TestWorkerKilled: two workers; the one running both calls of a run is
// killed (SIGKILL) mid-activity. The other takes the run over: the
// idempotent call runs again with the same key, the non-idempotent one is
// never run twice: it is unknown, for a person, who settles it.
func TestWorkerKilled(t *testing.T) {
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
	if _, err := temporal.StartRun(ctx, c, load(t, "takeover", l), map[string]any{}, temporal.StartOptions{RunID: "run-kill", TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(l.lines("slow_safe")) == 1 && len(l.lines("slow_charge")) == 1 })
	// both calls run in the child: start the second worker, kill the first.
	ts.NewWorkerWithOptions(queue, register(l.flows(t, false)), workerOptions)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	st := follow(t, c, "run-kill")
	if st.Status != "waiting" {
		t.Fatalf("run: %+v %+v\nchild: %s", st, st.Error, out.String())
	}
	safe := l.lines("slow_safe")
	if len(safe) != 2 || !strings.HasPrefix(safe[0], "run-kill/safe/1 ") || !strings.HasPrefix(safe[1], "run-kill/safe/1 ") || safe[0] == safe[1] {
		t.Errorf("slow_safe executions %v: want the same key, in both processes", safe)
	}
	if charge := l.lines("slow_charge"); len(charge) != 1 {
		t.Errorf("slow_charge executions %v: a non-idempotent call ran twice", charge)
	}
	var pend []temporal.Pending
	if err := temporal.Query(ctx, c, "run-kill", temporal.QueryPending, &pend); err != nil || len(pend) != 1 || pend[0].Step != "charge" || pend[0].Kind != "unknown" {
		t.Fatalf("pending %+v (%v)", pend, err)
	}
	if err := temporal.Decide(ctx, c, "run-kill", temporal.Decision{Step: "charge", Action: temporal.ActionSettle, Output: []byte(`{"charged":true}`), By: "ops"}); err != nil {
		t.Fatal(err)
	}
	if st := follow(t, c, "run-kill"); st.Status != "succeeded" {
		t.Fatalf("run after settle: %+v %+v", st, st.Error)
	}
	if charge := l.lines("slow_charge"); len(charge) != 1 {
		t.Errorf("slow_charge executions %v after the settle", charge)
	}
	saveHistory(t, c, "run-kill")
}

// TestEachItemWorkerKilled: the worker running a for_each item's call that
// is not safe to repeat is killed (SIGKILL) mid-call. The other worker
// takes the item over as lost: its tool's check: finds it took effect, so
// the item settles with the check's output — neither run again nor left
// to a person — and the other items run once each.
func TestEachItemWorkerKilled(t *testing.T) {
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
	if _, err := temporal.StartRun(ctx, c, load(t, "eachkill", l), map[string]any{"orders": []any{"a", "b", "c"}}, temporal.StartOptions{RunID: "run-eachkill", TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(l.lines("slow_refund")) == 1 })
	ts.NewWorkerWithOptions(queue, register(l.flows(t, false)), workerOptions)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	st := follow(t, c, "run-eachkill")
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v\nchild: %s", st, st.Error, out.String())
	}
	got := l.lines("slow_refund")
	want := []string{"run-eachkill/refunds[0]/1 ", "run-eachkill/refunds[1]/1 ", "run-eachkill/refunds[2]/1 "}
	if len(got) != len(want) {
		t.Fatalf("slow_refund executions %v: want each item's once", got)
	}
	for k, w := range want {
		if !strings.HasPrefix(got[k], w) {
			t.Errorf("slow_refund execution %d is %q, want key %q", k, got[k], w)
		}
	}
	var items []map[string]any
	if err := json.Unmarshal(st.Outputs["refunds"], &items); err != nil || len(items) != 3 || items[0]["found"] != "run-eachkill/refunds[0]/1" || items[1]["tool"] != "slow_refund" {
		t.Errorf("refunds output %s (%v): want item 0 the check's, the others the calls'", st.Outputs["refunds"], err)
	}
	saveHistory(t, c, "run-eachkill")
}
