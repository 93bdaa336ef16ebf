package rein_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// recorder is a Go tool that remembers the idempotency key of every call;
// block, when set, runs inside each call.
type recorder struct {
	spec  tool.Spec
	mu    sync.Mutex
	keys  []string
	block func(ctx context.Context) error
}

func (r *recorder) Spec() tool.Spec { return r.spec }

func (r *recorder) Call(ctx context.Context, _ any) (any, error) {
	r.mu.Lock()
	r.keys = append(r.keys, tool.CallInfoFrom(ctx).IdempotencyKey)
	r.mu.Unlock()
	if r.block != nil {
		if err := r.block(ctx); err != nil {
			return nil, err
		}
	}
	return map[string]any{"ok": true}, nil
}

func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

// workFixture is a flow calling one Go tool, and a SQLite file.
type workFixture struct {
	t    *testing.T
	db   string
	load *project.LoadOptions
	p    *project.Project
}

func newWorkFixture(t *testing.T, rec *recorder) *workFixture {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "flow.yaml")
	src := "name: w\ninputs: {type: object, properties: {n: {type: number}}}\nsteps:\n  - {id: a, tool: rec, args: {n: \"{n}\"}}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	load := &project.LoadOptions{Tools: []tool.Tool{rec}}
	p, err := project.Load(path, load)
	if err != nil {
		t.Fatal(err)
	}
	return &workFixture{t: t, db: filepath.Join(dir, "rein.db"), load: load, p: p}
}

// open opens a store on the fixture's file: one per worker, as if each
// were its own process.
func (fx *workFixture) open() store.Store {
	fx.t.Helper()
	st, err := openStore(context.Background(), fx.db)
	if err != nil {
		fx.t.Fatal(err)
	}
	fx.t.Cleanup(func() { _ = st.Close() })
	return st
}

func (fx *workFixture) enqueue(st store.Store, n int) []string {
	fx.t.Helper()
	var ids []string
	for i := range n {
		id, err := clientOf(&engine.Config{Store: st}).Enqueue(context.Background(), fx.p, map[string]any{"n": float64(i)}, nil)
		if err != nil {
			fx.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// noLeaks checks, after the test's stores are closed, that it left no
// goroutine behind.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countStatus(t *testing.T, st store.Store, status trace.RunStatus) int {
	t.Helper()
	runs, err := st.ListRuns(context.Background(), &store.ListRunsParams{Status: status, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(runs)
}

// work runs a worker on its own goroutine; the returned func cancels it
// and returns its error.
func work(st store.Store, opts *workOpts) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runWorker(ctx, st, opts) }()
	return func() error { cancel(); return <-done }
}

func TestWorkTwoWorkersRunEachRunOnce(t *testing.T) {
	noLeaks(t)
	rec := &recorder{spec: tool.Spec{Name: "rec", Effect: tool.EffectWrite},
		block: func(context.Context) error { time.Sleep(5 * time.Millisecond); return nil }}
	fx := newWorkFixture(t, rec)
	st1, st2 := fx.open(), fx.open()
	const n = 24
	ids := fx.enqueue(st1, n)

	stop1 := work(st1, &workOpts{Owner: "w1", Concurrency: 3, Poll: 10 * time.Millisecond, Load: fx.load})
	stop2 := work(st2, &workOpts{Owner: "w2", Concurrency: 3, Poll: 10 * time.Millisecond, Load: fx.load})
	waitFor(t, "every run to succeed", func() bool { return countStatus(t, st1, trace.RunSucceeded) == n })
	if err := stop1(); err != nil {
		t.Fatalf("worker 1: %v", err)
	}
	if err := stop2(); err != nil {
		t.Fatalf("worker 2: %v", err)
	}
	calls := rec.calls()
	seen := map[string]int{}
	for _, k := range calls {
		seen[k]++
	}
	for _, id := range ids {
		if seen[id+"/a/1"] != 1 {
			t.Errorf("run %s: step a ran %d times, want once", id, seen[id+"/a/1"])
		}
	}
	if len(calls) != n {
		t.Fatalf("%d tool calls for %d runs: %v", len(calls), n, calls)
	}
	for _, id := range ids {
		run, err := st1.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if run.LeaseOwner != "" && run.LeaseExpires.After(time.Now()) {
			t.Errorf("run %s still leased to %s", id, run.LeaseOwner)
		}
	}
}

func TestWorkAbandonsRunsInFlightForAnotherWorker(t *testing.T) {
	noLeaks(t)
	started := make(chan struct{}, 1)
	blocking := true
	var mu sync.Mutex
	rec := &recorder{spec: tool.Spec{Name: "rec", Effect: tool.EffectWrite, Idempotent: true},
		block: func(ctx context.Context) error {
			mu.Lock()
			b := blocking
			mu.Unlock()
			if !b {
				return nil
			}
			started <- struct{}{}
			<-ctx.Done()
			return context.Cause(ctx)
		}}
	fx := newWorkFixture(t, rec)
	st := fx.open()
	id := fx.enqueue(st, 1)[0]

	stop := work(st, &workOpts{Owner: "w1", Poll: 10 * time.Millisecond, Load: fx.load})
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the worker never called the tool")
	}
	t0 := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Fatalf("shutdown took %s", took)
	}
	run, err := st.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != trace.RunRunning || run.LeaseOwner != "" {
		t.Fatalf("abandoned run: status %s, lease %q; want running and released (not cancelled)", run.Status, run.LeaseOwner)
	}
	events, err := st.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Kind == trace.RunSettled || e.Kind == trace.AttemptFailed {
			t.Fatalf("the abandoned run journaled %s: %+v", e.Kind, e)
		}
	}

	mu.Lock()
	blocking = false
	mu.Unlock()
	stop = work(st, &workOpts{Owner: "w2", Poll: 10 * time.Millisecond, Load: fx.load})
	waitFor(t, "the second worker to finish the run", func() bool { return countStatus(t, st, trace.RunSucceeded) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// the tool is idempotent: the in-flight attempt ran again, same key
	if calls := rec.calls(); len(calls) != 2 || calls[0] != id+"/a/1" || calls[1] != id+"/a/1" {
		t.Fatalf("calls %v, want the same attempt twice", calls)
	}
}

func TestWorkGraceLetsRunsFinish(t *testing.T) {
	noLeaks(t)
	started := make(chan struct{}, 1)
	rec := &recorder{spec: tool.Spec{Name: "rec", Effect: tool.EffectWrite},
		block: func(ctx context.Context) error {
			started <- struct{}{}
			select {
			case <-time.After(200 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return errors.New("cancelled during the grace period")
			}
		}}
	fx := newWorkFixture(t, rec)
	st := fx.open()
	id := fx.enqueue(st, 1)[0]
	stop := work(st, &workOpts{Poll: 10 * time.Millisecond, Grace: 10 * time.Second, Load: fx.load})
	<-started
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	run, err := st.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != trace.RunSucceeded {
		t.Fatalf("run %s after a graceful stop, want succeeded", run.Status)
	}
}

func TestWorkNeedsADurableStore(t *testing.T) {
	t.Parallel()
	if err := runWorker(context.Background(), store.Ephemeral, nil); err == nil {
		t.Fatal("Work on the ephemeral store did not fail")
	}
}
