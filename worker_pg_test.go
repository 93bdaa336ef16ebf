package rein_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/postgres"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// pgDSN returns the test PostgreSQL, skipping without one (failing under CI).
func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("REIN_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REIN_TEST_POSTGRES_DSN is not set under CI: .ci/run must start PostgreSQL")
		}
		t.Skip(`needs PostgreSQL: eval "$(bash .ci/postgres)" && go test . -run Postgres`)
	}
	return dsn
}

// childTool writes one file per call, named by the idempotency key; a
// second call with the same key (a step run twice) fails to create it.
func childTool(dir, owner string) tool.Tool {
	return tool.Func(tool.Spec{Name: "send", Effect: tool.EffectExternal}, func(ctx context.Context, _ any) (any, error) {
		key := tool.CallInfoFrom(ctx).IdempotencyKey
		name := filepath.Join(dir, strings.ReplaceAll(key, "/", "_"))
		f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("step ran twice: %w", err)
		}
		fmt.Fprint(f, owner)
		f.Close()
		time.Sleep(30 * time.Millisecond)
		return map[string]any{"by": owner}, nil
	})
}

const pgWorkFlow = "name: pgw\ninputs: {type: object, properties: {n: {type: number}}}\nsteps:\n  - {id: send, tool: send, args: {n: \"{n}\"}}\n"

// TestPostgresWorkerChild is a worker process of TestPostgresWorkersShareRunsAndSurviveAKill.
func TestPostgresWorkerChild(t *testing.T) {
	owner := os.Getenv("REIN_PGWORKER_OWNER")
	if owner == "" {
		t.Skip("a worker process of TestPostgresWorkersShareRunsAndSurviveAKill")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	st, err := openStore(ctx, os.Getenv("REIN_PGWORKER_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = runWorker(ctx, st, &workOpts{Owner: owner, Concurrency: 2, Poll: 20 * time.Millisecond,
		LeaseTTL: time.Second, Load: &project.LoadOptions{Tools: []tool.Tool{childTool(os.Getenv("REIN_PGWORKER_CALLS"), owner)}}})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestPostgresWorkersShareRunsAndSurviveAKill(t *testing.T) {
	dsn := pgDSN(t)
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	ctx := context.Background()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	schema := "rein_workers_" + hex.EncodeToString(rnd[:])
	st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	childDSN := u.String()

	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	if err := os.Mkdir(calls, 0o755); err != nil {
		t.Fatal(err)
	}
	flowPath := filepath.Join(dir, "flow.yaml")
	if err := os.WriteFile(flowPath, []byte(pgWorkFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := project.Load(flowPath, &project.LoadOptions{Tools: []tool.Tool{childTool(calls, "parent")}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		if _, err := clientOf(&engine.Config{Store: st}).Enqueue(ctx, p, map[string]any{"n": float64(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	workers := map[string]*exec.Cmd{}
	for _, owner := range []string{"w1", "w2", "w3"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPostgresWorkerChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "REIN_PGWORKER_OWNER="+owner, "REIN_PGWORKER_DSN="+childDSN, "REIN_PGWORKER_CALLS="+calls)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		workers[owner] = cmd
	}
	defer func() {
		for _, cmd := range workers {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	by := func() map[string]int {
		out := map[string]int{}
		entries, _ := os.ReadDir(calls)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(calls, e.Name()))
			out[string(b)]++
		}
		return out
	}
	// kill w1 once it is working, with runs in flight.
	waitFor(t, "w1 to run a few steps", func() bool { return by()["w1"] >= 2 })
	if err := workers["w1"].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = workers["w1"].Wait()
	delete(workers, "w1")

	// every run ends succeeded, or waiting on a person when w1 died with its
	// (non-idempotent) step in flight; none is left pending or running.
	settled := func() bool {
		runs, err := st.ListRuns(ctx, &store.ListRunsParams{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Status == trace.RunPending || r.Status == trace.RunRunning {
				return false
			}
		}
		return len(runs) == n
	}
	waitFor(t, "the surviving workers to take over w1's runs", settled)
	for owner, cmd := range workers {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("worker %s: %v", owner, err)
		}
		delete(workers, owner)
	}
	counts := by()
	if counts["w2"] == 0 || counts["w3"] == 0 {
		t.Errorf("runs did not spread across the workers: %v", counts)
	}
	succeeded, waiting := 0, 0
	runs, err := st.ListRuns(ctx, &store.ListRunsParams{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		switch r.Status {
		case trace.RunSucceeded:
			succeeded++
		case trace.RunWaiting:
			waiting++
			steps, err := st.Steps(ctx, r.ID)
			if err != nil || len(steps) != 1 || steps[0].Status != trace.StepUnknown {
				t.Errorf("waiting run %s: steps %+v %v, want its step unknown", r.ID, steps, err)
			}
		default:
			t.Errorf("run %s ended %s", r.ID, r.Status)
		}
	}
	if waiting > 2 {
		t.Errorf("%d runs were parked as unknown; w1 had at most 2 in flight", waiting)
	}
	// a step run twice would have failed its run (the tool refuses a
	// second call with the same key); each succeeded run made its call.
	for _, r := range runs {
		if _, err := os.Stat(filepath.Join(calls, r.ID+"_send_1")); r.Status == trace.RunSucceeded && err != nil {
			t.Errorf("succeeded run %s has no call: %v", r.ID, err)
		}
	}
	t.Logf("succeeded %d, parked unknown %d, calls by worker %v", succeeded, waiting, counts)
}
