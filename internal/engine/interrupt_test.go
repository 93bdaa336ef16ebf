package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// blocking is a non-idempotent tool that says when it started and returns
// only when its call is cancelled.
func blocking(started chan<- struct{}) tool.Tool {
	return tool.Func(tool.Spec{Name: "send", Effect: tool.EffectExternal}, func(ctx context.Context, _ any) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, fault.New(fault.Cancelled, fmt.Errorf("call cancelled: %w", context.Cause(ctx)))
	})
}

// TestInterruptLeavesTheRunResumable: a run whose context ends with
// ErrInterrupted while a non-idempotent step runs commits nothing more —
// not the step's failure, not a cancellation — releases its lease, and a
// resume by another process parks the step as unknown. A plain
// cancellation still cancels.
func TestInterruptLeavesTheRunResumable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	started := make(chan struct{}, 1)
	done := newKeyCounter("done", false)
	fx := newFixture(t, blocking(started), done)
	f := fx.parse("name: i\nsteps:\n  - {id: first, tool: done, args: {}}\n  - {id: s, tool: send, args: {}}\n")
	st := openSQLite(t)
	run := func(owner string, cause error) *engine.Result {
		rctx, cancel := context.WithCancelCause(ctx)
		go func() {
			<-started
			cancel(cause)
		}()
		res, err := durableEngine(fx, st, owner).Run(rctx, f, nil, &engine.RunOptions{RunID: owner})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := run("interrupted", fmt.Errorf("interrupted by SIGINT: %w", engine.ErrInterrupted))
	if !res.Interrupted || res.Status != trace.RunRunning || res.Error == nil || res.Error.Class != fault.Cancelled {
		t.Fatalf("result: interrupted %v, status %s, error %+v; want interrupted, running, cancelled", res.Interrupted, res.Status, res.Error)
	}
	wantStep(t, res, "first", trace.StepSucceeded, 1)
	wantStep(t, res, "s", trace.StepRunning, 1)
	row, err := st.GetRun(ctx, "interrupted")
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != trace.RunRunning || row.LeaseOwner != "" {
		t.Fatalf("stored run: %s, lease %q; want running, released", row.Status, row.LeaseOwner)
	}
	steps, err := st.Steps(ctx, "interrupted")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if want := map[string]trace.StepStatus{"first": trace.StepSucceeded, "s": trace.StepRunning}[s.StepID]; s.Status != want {
			t.Errorf("stored step %s: %s, want %s", s.StepID, s.Status, want)
		}
	}
	evs, err := st.Events(ctx, "interrupted", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == trace.RunSettled || e.Kind == trace.StepSettled && e.StepID == "s" {
			t.Errorf("the interrupted run journaled %s %s", e.Kind, e.Status)
		}
	}
	// Another process takes it up at once (the lease was released): the
	// step whose effect began waits for a person.
	res, err = durableEngine(fx, st, "p2").Resume(ctx, f, "interrupted")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if len(res.Pending) != 1 || res.Pending[0].Kind != store.KindUnknown || res.Pending[0].StepID != "s" {
		t.Fatalf("pending %+v, want step s unknown", res.Pending)
	}
	if n := done.calls(); len(n) != 1 {
		t.Fatalf("the settled step ran %d times", len(n))
	}

	res = run("cancelled", errors.New("cancelled by a person"))
	if res.Interrupted || res.Status != trace.RunCancelled {
		t.Fatalf("plain cancel: interrupted %v, status %s; want cancelled", res.Interrupted, res.Status)
	}
	if row, err := st.GetRun(ctx, "cancelled"); err != nil || row.Status != trace.RunCancelled {
		t.Fatalf("stored cancelled run: %+v %v", row, err)
	}
}
