package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/engine"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// settlingStore settles the run (as another process would) just before the
// lease is taken: between Resume's first read and its lease.
type settlingStore struct {
	store.Store
}

func (s settlingStore) AcquireLease(ctx context.Context, p *store.LeaseParams) (*store.Run, error) {
	run, err := s.Store.GetRun(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	if !run.Finished() {
		if err := s.Store.Commit(ctx, &store.Transition{RunID: p.RunID, Version: run.Version,
			Events: []*trace.Event{{Seq: run.LastSeq + 1, Kind: trace.RunSettled, RunID: p.RunID}},
			Run:    &store.RunUpdate{Status: trace.RunCancelled}}); err != nil {
			return nil, err
		}
	}
	return s.Store.AcquireLease(ctx, p)
}

func TestResumeDoesNotReviveARunSettledBeforeItsLease(t *testing.T) {
	t.Parallel()
	a, b := newKeyCounter("a", false), newKeyCounter("b", true)
	fx := newFixture(t, a, b)
	st := openSQLite(t)
	crashState(t, st, nil, fx, crashFlow, true)
	res, err := durableEngine(fx, settlingStore{st}, "p1").Resume(context.Background(), fx.parse(crashFlow), "r")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunCancelled {
		t.Fatalf("status %s: a run cancelled before the lease was taken must stay cancelled", res.Status)
	}
	if n := len(a.calls()) + len(b.calls()); n != 0 {
		t.Fatalf("%d tool calls after the run was settled", n)
	}
	run, err := st.GetRun(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != trace.RunCancelled || run.LeaseOwner != "" {
		t.Fatalf("run %s, lease %q", run.Status, run.LeaseOwner)
	}
}

// A step that failed while a parallel branch was in flight is committed
// before the run settles; a crash in between must not make the resume run
// the failed (non-idempotent) step again: the run failed.
func TestResumeDoesNotRerunACommittedFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newKeyCounter("a", false), newKeyCounter("b", false)
	fx := newFixture(t, a, b)
	st := openSQLite(t)
	f := fx.parse("name: p\nsteps:\n  - {id: x, tool: a, args: {}, requires: []}\n  - {id: y, tool: b, args: {}, requires: []}\n")
	run, _, err := st.CreateRun(ctx, &store.CreateRunParams{ID: "r", Flow: f.Name, FlowHash: engine.FlowHash(f),
		FlowText: f.Source, Input: json.RawMessage(`{}`), Status: trace.RunRunning})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := st.Commit(ctx, &store.Transition{RunID: "r", Version: run.Version,
		Events: []*trace.Event{{Seq: 1, Kind: trace.RunStarted, RunID: "r", Time: now},
			{Seq: 2, Kind: trace.StepStarted, RunID: "r", StepID: "x", Time: now, Status: "running", Attempt: 1},
			{Seq: 3, Kind: trace.StepStarted, RunID: "r", StepID: "y", Time: now, Status: "running", Attempt: 1},
			{Seq: 4, Kind: trace.StepSettled, RunID: "r", StepID: "x", Time: now, Status: "failed", Attempt: 1}},
		Steps: []*store.Step{
			{RunID: "r", StepID: "x", Type: "tool", Status: trace.StepFailed, Attempt: 1, StartedAt: now, SettledAt: now,
				Error: json.RawMessage(`{"class":"business","step":"x","message":"boom"}`)},
			{RunID: "r", StepID: "y", Type: "tool", Status: trace.StepRunning, Attempt: 1, StartedAt: now}}}); err != nil {
		t.Fatal(err)
	}
	res, err := durableEngine(fx, st, "p1").Resume(ctx, f, "r")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.calls(); len(got) != 0 {
		t.Fatalf("the failed non-idempotent step x ran again: %v", got)
	}
	if got := b.calls(); len(got) != 0 {
		t.Fatalf("the in-flight non-idempotent step y ran again: %v", got)
	}
	if res.Status != trace.RunFailed || res.Error == nil || res.Error.Step != "x" {
		t.Fatalf("status %s, error %+v: want failed at x", res.Status, res.Error)
	}
}
