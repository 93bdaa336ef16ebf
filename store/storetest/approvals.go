package storetest

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// waitingRun creates a run waiting on one pending approval per step.
func waitingRun(t *testing.T, s store.Store, runID string, stepIDs ...string) *store.Transition {
	t.Helper()
	r := create(t, s, &store.CreateRunParams{ID: runID})
	tr := &store.Transition{RunID: runID, Version: r.Version, Run: &store.RunUpdate{Status: trace.RunWaiting}}
	for _, st := range stepIDs {
		tr.Steps = append(tr.Steps, &store.Step{StepID: st, Type: "tool", Status: trace.StepWaiting, Attempt: 1})
		tr.Approvals = append(tr.Approvals, &store.Approval{
			ID: "ap-" + runID + "-" + st, StepID: st, Kind: store.KindApproval, Tool: "deploy",
			Args: json.RawMessage(`{"env":"prod","step":"` + st + `"}`), Message: "deploy " + st + "?",
		})
	}
	commit(t, s, tr)
	return tr
}

func approvalIDs(ap []*store.Approval) []string {
	out := make([]string, len(ap))
	for i, a := range ap {
		out[i] = a.ID
	}
	return out
}

func approvals(t *testing.T, s store.Store, p *store.ListApprovalsParams) []*store.Approval {
	t.Helper()
	ap, err := s.Approvals(t.Context(), p)
	if err != nil {
		t.Fatalf("Approvals(%+v): %v", *p, err)
	}
	return ap
}

func testApprovals(t *testing.T, h Harness) {
	s := open(t, h)
	before := time.Now().Add(-time.Second)
	waitingRun(t, s, "one", "b", "a")
	waitingRun(t, s, "two", "x")
	ap := approvals(t, s, &store.ListApprovalsParams{RunID: "one"})
	if got := approvalIDs(ap); !equal(got, []string{"ap-one-b", "ap-one-a"}) {
		t.Fatalf("Approvals(one) = %v, want creation order [ap-one-b ap-one-a]", got)
	}
	a := ap[1]
	if a.RunID != "one" || a.StepID != "a" || a.Kind != store.KindApproval || a.Status != store.ApprovalPending ||
		a.Tool != "deploy" || !jsonEqual(a.Args, []byte(`{"env":"prod","step":"a"}`)) || a.Message != "deploy a?" {
		t.Errorf("approval = %s", jsonString(a))
	}
	if a.CreatedAt.Before(before) || a.CreatedAt.After(time.Now().Add(time.Second)) || !a.DecidedAt.IsZero() {
		t.Errorf("approval CreatedAt %v DecidedAt %v", a.CreatedAt, a.DecidedAt)
	}
	if got := approvalIDs(approvals(t, s, &store.ListApprovalsParams{})); !equal(got, []string{"ap-one-b", "ap-one-a", "ap-two-x"}) {
		t.Errorf("Approvals of every run = %v", got)
	}
	if _, err := s.DecideApproval(t.Context(), &store.DecideApprovalParams{RunID: "one", StepID: "a", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    store.ListApprovalsParams
		want []string
	}{
		{store.ListApprovalsParams{RunID: "one", Status: store.ApprovalPending}, []string{"ap-one-b"}},
		{store.ListApprovalsParams{RunID: "one", Status: store.ApprovalApproved}, []string{"ap-one-a"}},
		{store.ListApprovalsParams{Status: store.ApprovalPending}, []string{"ap-one-b", "ap-two-x"}},
		{store.ListApprovalsParams{Status: store.ApprovalRejected}, nil},
		{store.ListApprovalsParams{RunID: "three"}, nil},
	} {
		if got := approvalIDs(approvals(t, s, &tc.p)); !equal(got, tc.want) {
			t.Errorf("Approvals(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := approvalIDs(approvals(t, s, &store.ListApprovalsParams{RunID: "one"})); !equal(got, []string{"ap-one-b", "ap-one-a"}) {
		t.Errorf("Approvals(one) after a decision = %v, want creation order kept", got)
	}
}

func testDecideApproval(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	tr := waitingRun(t, s, "run", "a", "b", "c")
	version := tr.Version
	for _, tc := range []struct {
		step   string
		status store.ApprovalStatus
		output json.RawMessage
	}{
		{"a", store.ApprovalApproved, nil},
		{"b", store.ApprovalRejected, nil},
		{"c", store.ApprovalSettled, json.RawMessage(`{"deployed":true}`)},
	} {
		before := time.Now().Add(-time.Second)
		got, err := s.DecideApproval(ctx, &store.DecideApprovalParams{
			RunID: "run", StepID: tc.step, Status: tc.status, Output: tc.output, Comment: "ok by me: " + tc.step, DecidedBy: "alice",
		})
		if err != nil {
			t.Fatalf("DecideApproval(%s, %s): %v", tc.step, tc.status, err)
		}
		if got.ID != "ap-run-"+tc.step || got.RunID != "run" || got.StepID != tc.step || got.Status != tc.status ||
			got.Comment != "ok by me: "+tc.step || got.DecidedBy != "alice" || got.Tool != "deploy" || got.Kind != store.KindApproval {
			t.Errorf("DecideApproval(%s) = %s", tc.step, jsonString(got))
		}
		if got.DecidedAt.Before(before) || got.DecidedAt.After(time.Now().Add(time.Second)) {
			t.Errorf("DecideApproval(%s): DecidedAt = %v, not now", tc.step, got.DecidedAt)
		}
		if tc.output != nil && !bytes.Equal(got.Output, tc.output) {
			t.Errorf("DecideApproval(%s): Output = %s, want %s", tc.step, got.Output, tc.output)
		}
		r := get(t, s, "run")
		if r.Version != version+1 {
			t.Errorf("DecideApproval(%s): run Version = %d, want %d", tc.step, r.Version, version+1)
		}
		// the last decision makes the waiting run ready for a worker.
		if want := map[bool]trace.RunStatus{false: trace.RunWaiting, true: trace.RunPending}[tc.step == "c"]; r.Status != want {
			t.Errorf("after deciding %s: run status %s, want %s", tc.step, r.Status, want)
		}
		version = r.Version
		listed := approvals(t, s, &store.ListApprovalsParams{RunID: "run", Status: tc.status})
		if len(listed) != 1 || jsonString(listed[0]) != jsonString(got) {
			t.Errorf("Approvals lists %s, DecideApproval returned %s", jsonString(listed), jsonString(got))
		}
	}
	// The engine still holding the version of its last commit must re-read.
	err := s.Commit(ctx, &store.Transition{RunID: "run", Version: tr.Version, Events: []*trace.Event{event("run", 1, trace.StepSettled, "a")}})
	wantErr(t, "Commit on the version from before the decisions", err, store.ErrConflict)
}

func testDecideApprovalErrors(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	waitingRun(t, s, "run", "a", "b")
	if _, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "run", StepID: "a", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	version := get(t, s, "run").Version
	for _, st := range []store.ApprovalStatus{store.ApprovalApproved, store.ApprovalRejected, store.ApprovalSettled} {
		_, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "run", StepID: "a", Status: st})
		wantErr(t, "deciding an approval twice ("+string(st)+")", err, store.ErrConflict)
	}
	_, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "run", StepID: "nope", Status: store.ApprovalApproved})
	wantErr(t, "DecideApproval of an unknown step", err, store.ErrNotFound)
	for _, st := range []store.ApprovalStatus{store.ApprovalPending, "bogus", ""} {
		if _, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "run", StepID: "b", Status: st}); err == nil {
			t.Errorf("DecideApproval with status %q succeeded", st)
		}
	}
	if got := approvalIDs(approvals(t, s, &store.ListApprovalsParams{RunID: "run", Status: store.ApprovalPending})); !equal(got, []string{"ap-run-b"}) {
		t.Errorf("pending after failed decisions = %v, want [ap-run-b]", got)
	}
	if v := get(t, s, "run").Version; v != version {
		t.Errorf("failed decisions moved the Version from %d to %d", version, v)
	}
}

// testDecideApprovalOfFinishedRun: the transition that settles a run (here
// cancels it) closes its pending approvals in the same commit — rejected,
// with the update's Reason or a default — and a finished run takes no
// decision any more.
func testDecideApprovalOfFinishedRun(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	for _, tc := range []struct{ run, reason, comment string }{
		{"given", "the run was cancelled: not this week", "the run was cancelled: not this week"},
		{"default", "", "the run is cancelled"},
	} {
		tr := waitingRun(t, s, tc.run, "a", "b")
		commit(t, s, &store.Transition{RunID: tc.run, Version: tr.Version,
			Run: &store.RunUpdate{Status: trace.RunCancelled, SettledAt: time.Now(), Reason: tc.reason}})
		if left := approvals(t, s, &store.ListApprovalsParams{RunID: tc.run, Status: store.ApprovalPending}); len(left) != 0 {
			t.Errorf("%s: pending approvals after the run was cancelled: %v", tc.run, approvalIDs(left))
		}
		for _, a := range approvals(t, s, &store.ListApprovalsParams{RunID: tc.run}) {
			if a.Status != store.ApprovalRejected || a.Comment != tc.comment || a.DecidedAt.IsZero() {
				t.Errorf("%s: approval of step %s is %s %q at %v, want rejected %q", tc.run, a.StepID, a.Status, a.Comment, a.DecidedAt, tc.comment)
			}
		}
		version := get(t, s, tc.run).Version
		for _, st := range []store.ApprovalStatus{store.ApprovalApproved, store.ApprovalRejected, store.ApprovalSettled} {
			_, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: tc.run, StepID: "a", Status: st, Output: json.RawMessage(`{}`)})
			wantErr(t, "deciding an approval of a cancelled run ("+string(st)+")", err, store.ErrConflict)
		}
		if r := get(t, s, tc.run); r.Version != version || r.Status != trace.RunCancelled {
			t.Errorf("%s: refused decisions moved the run to %s at version %d (was cancelled at %d)", tc.run, r.Status, r.Version, version)
		}
	}
}

// testApprovalAskedAgain: a step approved once and asked again (it was in
// flight at a second crash) has two approvals; the decision goes to the
// pending one.
func testApprovalAskedAgain(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	tr := waitingRun(t, s, "run", "a")
	if _, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "run", StepID: "a", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	tr.Version = get(t, s, "run").Version
	tr.Run, tr.Steps = nil, nil
	tr.Approvals = []*store.Approval{{ID: "ap-again", StepID: "a", Kind: store.KindUnknown, Message: "was it deployed?"}}
	commit(t, s, tr)
	got, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "run", StepID: "a", Status: store.ApprovalSettled, Output: json.RawMessage(`{"deployed":false}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "ap-again" || got.Kind != store.KindUnknown || got.Status != store.ApprovalSettled {
		t.Errorf("decided %s, want ap-again settled", jsonString(got))
	}
	all := approvals(t, s, &store.ListApprovalsParams{RunID: "run"})
	if len(all) != 2 || all[0].Status != store.ApprovalApproved || all[1].Status != store.ApprovalSettled {
		t.Errorf("approvals = %s", jsonString(all))
	}
}

// testEscalationKind: an escalation (a failed step a person decides about,
// asked again after an approval) keeps its kind and message, and each of
// its decisions goes to the pending one.
func testEscalationKind(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	r := create(t, s, &store.CreateRunParams{ID: "run"})
	tr := &store.Transition{RunID: "run", Version: r.Version, Run: &store.RunUpdate{Status: trace.RunWaiting},
		Steps: []*store.Step{{StepID: "pay", Type: "tool", Status: trace.StepWaiting, Attempt: 1,
			Error: json.RawMessage(`{"class":"business","message":"card declined"}`)}},
		Approvals: []*store.Approval{{ID: "esc-1", StepID: "pay", Kind: store.KindEscalation, Tool: "pay",
			Message: "step pay failed: card declined"}}}
	commit(t, s, tr)
	ap := approvals(t, s, &store.ListApprovalsParams{RunID: "run", Status: store.ApprovalPending})
	if len(ap) != 1 || ap[0].Kind != store.KindEscalation || ap[0].Message != "step pay failed: card declined" {
		t.Fatalf("pending = %s", jsonString(ap))
	}
	if _, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "run", StepID: "pay", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	tr = &store.Transition{RunID: "run", Version: get(t, s, "run").Version,
		Approvals: []*store.Approval{{ID: "esc-2", StepID: "pay", Kind: store.KindEscalation, Message: "step pay failed: still declined"}}}
	commit(t, s, tr)
	got, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "run", StepID: "pay", Status: store.ApprovalRejected, Comment: "give up"})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "esc-2" || got.Kind != store.KindEscalation || got.Status != store.ApprovalRejected || got.Comment != "give up" {
		t.Errorf("decided %s, want esc-2 rejected", jsonString(got))
	}
	steps, err := s.Steps(ctx, "run")
	if err != nil || len(steps) != 1 || !jsonEqual(steps[0].Error, []byte(`{"class":"business","message":"card declined"}`)) {
		t.Errorf("steps = %s, %v: the waiting step keeps its error", jsonString(steps), err)
	}
}
