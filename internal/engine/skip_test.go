package engine_test

import (
	"context"
	"testing"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// refundFlow is the README's advice: ask a person only for large refunds.
const refundFlow = `name: refund
inputs:
  type: object
  properties: {amount: {type: number}}
steps:
  - {id: lookup, tool: log, args: {}}
  - {id: approve, type: approval, when: "input.amount > 100", message: "refund {input.amount}?"}
  - {id: refund, tool: send, args: {amount: "{input.amount}"}}
  - {id: receipt, tool: log, requires: [approve, refund], args: {}}
`

// A skipped approval means no approval was needed: the steps after it in
// the list, and a step naming it in requires, run.
func TestSkippedApprovalDoesNotSkipTheRefund(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	send, log := newKeyCounter("send", false), newKeyCounter("log", false)
	fx := newFixture(t, send, log)
	st := openSQLite(t)
	e := durableEngine(fx, st, "p1")
	f := fx.parse(refundFlow)

	res, err := e.Run(ctx, f, map[string]any{"amount": 20.0}, &engine.RunOptions{RunID: "small"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "approve", trace.StepSkipped, 0)
	wantStep(t, res, "refund", trace.StepSucceeded, 1)
	wantStep(t, res, "receipt", trace.StepSucceeded, 1)
	if len(send.calls()) != 1 {
		t.Fatalf("the refund ran %d times, want once", len(send.calls()))
	}

	// a large refund waits for the person, and a resume decides the same.
	res, err = e.Run(ctx, f, map[string]any{"amount": 500.0}, &engine.RunOptions{RunID: "large"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if len(send.calls()) != 1 {
		t.Fatal("the large refund ran before its approval")
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "large", StepID: "approve", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	if res, err = e.Resume(ctx, f, "large"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "refund", trace.StepSucceeded, 1)
	if len(send.calls()) != 2 {
		t.Fatalf("send calls %d, want 2", len(send.calls()))
	}
}

// A resumed run takes the same skip decisions as the first process: a
// skipped step's plain-list successor runs, its reader is skipped.
func TestResumeKeepsSkipDecisions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	send, log := newKeyCounter("send", false), newKeyCounter("log", false)
	fx := newFixture(t, send, log)
	st := openSQLite(t)
	e := durableEngine(fx, st, "p1")
	f := fx.parse(`name: resumed
steps:
  - {id: a, tool: log, args: {}}
  - {id: b, tool: log, when: "a.n > 5"}
  - {id: gate, type: approval}
  - {id: c, tool: send, args: {}}
  - {id: reads, tool: log, args: {n: "{b.n}"}}
  - {id: d, tool: log}
`)
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	wantStep(t, res, "b", trace.StepSkipped, 0)
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "gate", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	if res, err = e.Resume(ctx, f, "r"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "c", trace.StepSucceeded, 1)
	wantStep(t, res, "reads", trace.StepSkipped, 0)
	wantStep(t, res, "d", trace.StepSucceeded, 1)
}
