package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// TestCancelClosesPendingApprovals: a cancelled run waits for nobody, so
// Cancel records its pending approvals as rejected with the reason; none
// stays pending (in a list of what waits for a person) or decidable.
func TestCancelClosesPendingApprovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	send := newKeyCounter("send", true)
	fx := newFixture(t, send)
	st := openSQLite(t)
	e := durableEngine(fx, st, "p1")
	// two branches wait at once: an approval step and a tool step with
	// approval: required.
	f := fx.parse("name: c\nsteps:\n  - {id: review, type: approval, message: ok?}\n  - {id: s, tool: send, approval: required, requires: [], args: {}}\n")
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if len(res.Pending) != 2 {
		t.Fatalf("pending %d, want 2: %+v", len(res.Pending), res.Steps)
	}
	if err := durableEngine(fx, st, "p2").Cancel(ctx, "r", "not this week"); err != nil {
		t.Fatal(err)
	}
	run, err := st.GetRun(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != trace.RunCancelled {
		t.Fatalf("run %s, want cancelled", run.Status)
	}
	if left, err := st.Approvals(ctx, &store.ListApprovalsParams{Status: store.ApprovalPending}); err != nil || len(left) != 0 {
		t.Fatalf("pending approvals after the cancel: %v %v", left, err)
	}
	all, err := st.Approvals(ctx, &store.ListApprovalsParams{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		if a.Status != store.ApprovalRejected || !strings.Contains(a.Comment, "not this week") || a.DecidedAt.IsZero() {
			t.Errorf("approval of step %s: %s %q at %v, want rejected with the cancel's reason", a.StepID, a.Status, a.Comment, a.DecidedAt)
		}
	}
	_, err = st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "s", Status: store.ApprovalApproved})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("approving a step of the cancelled run: %v, want a conflict", err)
	}
	if run, err = st.GetRun(ctx, "r"); err != nil || run.Status != trace.RunCancelled {
		t.Fatalf("run %v %v after the refused decision", run, err)
	}
	if got := send.calls(); len(got) != 0 {
		t.Fatalf("the tool of the cancelled run ran: %v", got)
	}
}

// A run that fails while a parallel branch waits on a person closes that
// approval in its final commit: nobody is left to approve it for.
func TestFailedRunClosesPendingApprovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	boom := newKeyCounter("boom", true)
	boom.fail = func(int) error { return fault.BusinessErr(errors.New("no such customer")) }
	fx := newFixture(t, boom)
	st := openSQLite(t)
	f := fx.parse("name: c\nsteps:\n  - {id: review, type: approval, message: ok?}\n  - {id: s, tool: boom, requires: [], args: {}}\n")
	res, err := durableEngine(fx, st, "p1").Run(ctx, f, nil, &engine.RunOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunFailed)
	all, err := st.Approvals(ctx, &store.ListApprovalsParams{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Status != store.ApprovalRejected || !strings.Contains(all[0].Comment, "no such customer") {
		t.Fatalf("approvals of the failed run: %+v, want review's, rejected with the failure", all)
	}
}
