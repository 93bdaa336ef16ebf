package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

const threeSteps = "name: three\nsteps:\n  - {id: a, tool: echo, args: {n: 1}}\n  - {id: b, tool: echo, args: {n: 2}}\n  - {id: c, tool: echo, args: {n: 3}}\n"

// keeper is a sink that keeps the events it is handed, not copies.
type keeper struct {
	mu     sync.Mutex
	events []*trace.Event
}

func (k *keeper) Emit(_ context.Context, e *trace.Event) {
	k.mu.Lock()
	k.events = append(k.events, e)
	k.mu.Unlock()
}

// checkKept checks that the kept events are one run's, numbered 1..n in
// order, from run_started to run_settled, each step started and settled.
func checkKept(t *testing.T, k *keeper, runID string, steps ...string) {
	t.Helper()
	want := []string{"1 run_started "}
	for _, s := range steps {
		want = append(want, fmt.Sprintf("%d step_started %s", len(want)+1, s), fmt.Sprintf("%d step_settled %s", len(want)+2, s))
	}
	want = append(want, fmt.Sprintf("%d run_settled ", len(want)+1))
	if len(k.events) != len(want) {
		t.Fatalf("%d events kept, want %d", len(k.events), len(want))
	}
	for i, e := range k.events {
		if got := fmt.Sprintf("%d %s %s", e.Seq, e.Kind, e.StepID); got != want[i] || e.RunID != runID {
			t.Errorf("kept event %d is %q of run %s, want %q of run %s", i, got, e.RunID, want[i], runID)
		}
	}
}

// An event handed to a sink is the sink's to keep: the engine never
// reuses or changes it afterwards, in memory and in a durable run.
func TestSinkMayKeepEvents(t *testing.T) {
	t.Parallel()
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, echoTool("echo"))
			k := &keeper{}
			cfg := engine.Config{Tools: fx.tools, Clock: fx.clock, Sink: k}
			if durable {
				cfg.Store = openSQLite(t)
			}
			res, err := engine.New(cfg).Run(context.Background(), fx.parse(threeSteps), map[string]any{}, nil)
			if err != nil || res.Status != trace.RunSucceeded {
				t.Fatalf("run: %v, %+v", err, res)
			}
			checkKept(t, k, res.RunID, "a", "b", "c")
		})
	}
}

// A run without a store does none of a durable run's work: the store is
// never asked to commit anything (nor to create the run, nor to lease
// it), and the sink still gets every event.
func TestEphemeralRunCommitsNothing(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, echoTool("echo"))
	st := &countingStore{Store: store.Ephemeral}
	k := &keeper{}
	res, err := engine.New(engine.Config{Tools: fx.tools, Clock: fx.clock, Sink: k, Store: st}).
		Run(context.Background(), fx.parse(threeSteps), map[string]any{}, nil)
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("run: %v, %+v", err, res)
	}
	if st.commits != 0 || st.creates != 0 {
		t.Errorf("an ephemeral run made %d commits and %d CreateRun calls, want none", st.commits, st.creates)
	}
	checkKept(t, k, res.RunID, "a", "b", "c")
}

// blockOn is a sink that, on the step_started event of step, calls block
// (outside any lock of its own); it keeps every event.
type blockOn struct {
	keeper
	step  string
	block func()
}

func (s *blockOn) Emit(ctx context.Context, e *trace.Event) {
	if e.Kind == trace.StepStarted && e.StepID == s.step {
		s.block()
	}
	s.keeper.Emit(ctx, e)
}

// A sink is called outside the run's lock: while the scheduler is inside
// the sink, a worker still records its events (here a failed attempt)
// and goes on to its retry. The worker's event reaches the sink after
// the one in progress, in sequence order.
func TestSinkIsCalledOutsideTheRunLock(t *testing.T) {
	t.Parallel()
	blocked, retried := make(chan struct{}), make(chan struct{})
	var calls int
	flaky := goTool("flaky", func(ctx context.Context, _ map[string]any) (any, error) {
		if calls++; calls == 1 {
			<-blocked // the scheduler is in the sink now
			return nil, fault.TransientErr(errors.New("try again"))
		}
		close(retried)
		return map[string]any{}, nil
	})
	fx := newFixture(t, flaky, echoTool("echo"))
	sink := &blockOn{step: "b", block: func() {
		close(blocked)
		select {
		case <-retried:
		case <-time.After(time.Minute):
			t.Error("the worker of step a could not record its failed attempt while the sink was called")
		}
	}}
	f := fx.parse("name: par\nsteps:\n  - {id: a, tool: flaky, args: {}, requires: [], retries: 1}\n  - {id: b, tool: echo, args: {}, requires: []}\n")
	res, err := engine.New(engine.Config{Tools: fx.tools, Clock: fx.clock, Sink: sink}).Run(context.Background(), f, map[string]any{}, nil)
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("run: %v, %+v", err, res)
	}
	var kinds []string
	for i, e := range sink.events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: events must reach the sink in order", i, e.Seq)
		}
		kinds = append(kinds, string(e.Kind)+" "+e.StepID)
	}
	if len(kinds) < 4 || kinds[2] != "step_started b" || kinds[3] != "attempt_failed a" {
		t.Errorf("events %v: want step_started b, then attempt_failed a", kinds)
	}
}

// stuck is a sink whose Emit never returns until released.
type stuck struct{ release chan struct{} }

func (s *stuck) Emit(context.Context, *trace.Event) { <-s.release }

// A sink that never returns, behind trace.NewAsync, does not stall the
// run: the run settles, the events that did not fit the queue are counted
// as dropped, and Close gives up on the sink at its deadline; once the
// sink returns, the async sink's goroutine ends (TestMain checks for
// leaks).
func TestStuckSinkBehindAsyncDoesNotStallRuns(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, echoTool("echo"))
	s := &stuck{release: make(chan struct{})}
	async := trace.NewAsync(s, &trace.AsyncOptions{Buffer: 2})
	e := engine.New(engine.Config{Tools: fx.tools, Clock: fx.clock, Sink: async})
	done := make(chan *engine.Result)
	go func() {
		res, err := e.Run(context.Background(), fx.parse(threeSteps), map[string]any{}, nil)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case res := <-done:
		if res == nil || res.Status != trace.RunSucceeded {
			t.Fatalf("run: %+v", res)
		}
	case <-time.After(time.Minute):
		close(s.release)
		t.Fatal("the run did not settle: the stuck sink stalled it")
	}
	// 8 events: one in the sink, at most 2 queued, at most 2 taken with it.
	if d := async.Dropped(); d < 3 {
		t.Errorf("Dropped() = %d, want at least 3 of 8", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := async.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close of a stuck sink = %v, want the deadline", err)
	}
	close(s.release)
	if err := async.Close(context.Background()); err != nil {
		t.Errorf("Close once the sink returned: %v", err)
	}
}

// The engine keeps the flows it ran last bound, and no more: running
// 10,000 distinct flows leaves CachedFlows bindings.
func TestBindingCacheIsBounded(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, echoTool("echo"))
	e := engine.New(engine.Config{Tools: fx.tools, Clock: fx.clock})
	for i := range 10000 {
		f := fx.parse(fmt.Sprintf("name: f%d\nsteps:\n  - {id: a, tool: echo, args: {n: %d}}\n", i, i))
		if res, err := e.Run(context.Background(), f, map[string]any{}, nil); err != nil || res.Status != trace.RunSucceeded {
			t.Fatalf("run %d: %v, %+v", i, err, res)
		}
		if n := engine.CachedBindings(e); n > engine.CachedFlows {
			t.Fatalf("after %d flows the engine keeps %d bound, more than %d", i+1, n, engine.CachedFlows)
		}
	}
	if n := engine.CachedBindings(e); n != engine.CachedFlows {
		t.Errorf("the engine keeps %d flows bound, want %d", n, engine.CachedFlows)
	}
}

// echoTool is a pure tool returning its args.
func echoTool(name string) tool.Tool {
	return goTool(name, func(_ context.Context, args map[string]any) (any, error) { return args, nil })
}
