package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// testNowRequired: a method that decides by time refuses a zero Now with
// ErrNoTime, and changes nothing.
func testNowRequired(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	create(t, s, &store.CreateRunParams{ID: "run"})
	_, err := s.AcquireLease(ctx, &store.LeaseParams{RunID: "run", Owner: "A", TTL: time.Minute})
	wantErr(t, "AcquireLease without Now", err, store.ErrNoTime)
	a := acquire(t, s, "run", "A", past, time.Minute)
	err = s.RenewLease(ctx, &store.LeaseParams{RunID: "run", Owner: "A", TTL: time.Minute})
	wantErr(t, "RenewLease without Now", err, store.ErrNoTime)
	_, err = s.ClaimRuns(ctx, &store.ClaimParams{Owner: "W", TTL: time.Minute, Limit: 10})
	wantErr(t, "ClaimRuns without Now", err, store.ErrNoTime)
	if g := get(t, s, "run"); g.LeaseOwner != "A" || g.Version != a.Version || !g.LeaseExpires.Equal(a.LeaseExpires) {
		t.Errorf("a call without Now changed the run: owner %q version %d (want %d) until %v", g.LeaseOwner, g.Version, a.Version, g.LeaseExpires)
	}
	_, _, err = s.CreateRun(ctx, &store.CreateRunParams{ID: "leased", Flow: "f", FlowHash: "sha256:f", Input: json.RawMessage(`{}`), Owner: "A", LeaseTTL: time.Minute})
	wantErr(t, "CreateRun leased without Now", err, store.ErrNoTime)
	err = s.Commit(ctx, &store.Transition{RunID: "made", Create: &store.CreateRunParams{ID: "made", Flow: "f", FlowHash: "sha256:f",
		Input: json.RawMessage(`{}`), Owner: "A", LeaseTTL: time.Minute}, Events: []*trace.Event{event("made", 1, trace.RunStarted, "")}})
	wantErr(t, "a creating Commit leased without Now", err, store.ErrNoTime)
	for _, id := range []string{"leased", "made"} {
		_, err := s.GetRun(ctx, id)
		wantErr(t, "GetRun of "+id+" refused for want of Now", err, store.ErrNotFound)
	}
	_, err = s.Prune(ctx, &store.PruneParams{Before: future})
	wantErr(t, "Prune without Now", err, store.ErrNoTime)
}

// testRecordsAtCallersTime: the times a store records are the caller's
// Now: a run's creation and update, an approval's creation and decision,
// a settlement the transition does not time itself, and the closing of the
// approvals a final transition leaves pending.
func testRecordsAtCallersTime(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	r := create(t, s, &store.CreateRunParams{ID: "run", Now: past})
	if g := get(t, s, "run"); !r.CreatedAt.Equal(past) || !g.CreatedAt.Equal(past) || !g.UpdatedAt.Equal(past) {
		t.Errorf("CreateRun at %v: returned CreatedAt %v, stored CreatedAt %v UpdatedAt %v", past, r.CreatedAt, g.CreatedAt, g.UpdatedAt)
	}
	asked := past.Add(time.Minute)
	tr := &store.Transition{RunID: "run", Version: r.Version, Now: asked,
		Events: []*trace.Event{event("run", 1, trace.RunStarted, "")},
		Run:    &store.RunUpdate{Status: trace.RunWaiting},
		Approvals: []*store.Approval{{ID: "ap-a", StepID: "a", Kind: store.KindApproval},
			{ID: "ap-b", StepID: "b", Kind: store.KindApproval}}}
	commit(t, s, tr)
	if g := get(t, s, "run"); !g.UpdatedAt.Equal(asked) {
		t.Errorf("after a Commit at %v: UpdatedAt %v", asked, g.UpdatedAt)
	}
	for _, a := range approvals(t, s, &store.ListApprovalsParams{RunID: "run"}) {
		if !a.CreatedAt.Equal(asked) {
			t.Errorf("approval %s: CreatedAt %v, want the transition's Now %v", a.ID, a.CreatedAt, asked)
		}
	}
	decided := past.Add(2 * time.Minute)
	a, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "run", StepID: "a", Status: store.ApprovalApproved, Now: decided})
	if err != nil {
		t.Fatal(err)
	}
	if !a.DecidedAt.Equal(decided) {
		t.Errorf("DecideApproval at %v: DecidedAt %v", decided, a.DecidedAt)
	}
	if g := get(t, s, "run"); !g.UpdatedAt.Equal(decided) {
		t.Errorf("after DecideApproval at %v: UpdatedAt %v", decided, g.UpdatedAt)
	}
	settled := past.Add(3 * time.Minute)
	commit(t, s, &store.Transition{RunID: "run", Version: get(t, s, "run").Version, Now: settled,
		Events: []*trace.Event{event("run", 2, trace.RunSettled, "")},
		Run:    &store.RunUpdate{Status: trace.RunCancelled}})
	if g := get(t, s, "run"); !g.SettledAt.Equal(settled) || !g.UpdatedAt.Equal(settled) {
		t.Errorf("a final Commit at %v without SettledAt: SettledAt %v UpdatedAt %v", settled, g.SettledAt, g.UpdatedAt)
	}
	for _, a := range approvals(t, s, &store.ListApprovalsParams{RunID: "run"}) {
		if a.ID == "ap-b" && (a.Status != store.ApprovalRejected || !a.DecidedAt.Equal(settled)) {
			t.Errorf("the approval the final Commit closed: %s at %v, want rejected at %v", a.Status, a.DecidedAt, settled)
		}
	}
}
