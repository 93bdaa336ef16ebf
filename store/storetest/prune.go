package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// settledRun creates a run with an event, a step (with outputs), an
// approval, and commits it to status, settled at settledAt (zero: never).
func settledRun(t *testing.T, s store.Store, id string, status trace.RunStatus, settledAt time.Time, retention time.Duration, outputs ...json.RawMessage) {
	t.Helper()
	r := create(t, s, &store.CreateRunParams{ID: id, Retention: retention})
	tr := &store.Transition{
		RunID: id, Version: r.Version,
		Events:    []*trace.Event{event(id, 1, trace.RunStarted, ""), event(id, 2, trace.RunSettled, "")},
		Run:       &store.RunUpdate{Status: status, SettledAt: settledAt},
		Steps:     []*store.Step{{StepID: "s", Status: trace.StepSucceeded, Output: json.RawMessage(`{"small":1}`)}},
		Approvals: []*store.Approval{{ID: "ap-" + id, StepID: "s", Kind: store.KindApproval}},
	}
	for i, out := range outputs {
		tr.Steps = append(tr.Steps, &store.Step{StepID: "out" + string(rune('a'+i)), Status: trace.StepSucceeded, Output: out})
	}
	commit(t, s, tr)
}

func prune(t *testing.T, s store.Store, p store.PruneParams) *store.PruneResult {
	t.Helper()
	if p.Now.IsZero() {
		p.Now = time.Now()
	}
	res, err := s.Prune(t.Context(), &p)
	if err != nil {
		t.Fatalf("Prune(%+v): %v", p, err)
	}
	return res
}

func wantGone(t *testing.T, s store.Store, id string) {
	t.Helper()
	ctx := t.Context()
	_, err := s.GetRun(ctx, id)
	wantErr(t, "GetRun of pruned "+id, err, store.ErrNotFound)
	_, err = s.Events(ctx, id, 0, 0)
	wantErr(t, "Events of pruned "+id, err, store.ErrNotFound)
	_, err = s.Steps(ctx, id)
	wantErr(t, "Steps of pruned "+id, err, store.ErrNotFound)
	if ap := approvals(t, s, &store.ListApprovalsParams{RunID: id}); len(ap) != 0 {
		t.Errorf("pruned %s still has approvals %v", id, approvalIDs(ap))
	}
}

func wantKept(t *testing.T, s store.Store, id string) {
	t.Helper()
	get(t, s, id)
	if n := len(events(t, s, id, 0, 0)); n != 2 {
		t.Errorf("kept %s has %d events, want 2", id, n)
	}
	if n := len(steps(t, s, id)); n == 0 {
		t.Errorf("kept %s lost its steps", id)
	}
	if n := len(approvals(t, s, &store.ListApprovalsParams{RunID: id})); n != 1 {
		t.Errorf("kept %s has %d approvals, want 1", id, n)
	}
}

func testPrune(t *testing.T, h Harness) {
	s := open(t, h)
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	settledRun(t, s, "s-old", trace.RunSucceeded, old, 0)
	settledRun(t, s, "f-old", trace.RunFailed, old, 0)
	settledRun(t, s, "c-old", trace.RunCancelled, old, 0)
	settledRun(t, s, "s-new", trace.RunSucceeded, now, 0)
	settledRun(t, s, "w-old", trace.RunWaiting, old, 0)
	settledRun(t, s, "r-old", trace.RunRunning, old, 0)
	settledRun(t, s, "p-old", trace.RunPending, old, 0)
	settledRun(t, s, "s-unsettled", trace.RunSucceeded, time.Time{}, 0)
	dry := prune(t, s, store.PruneParams{Before: now.Add(-time.Hour), DryRun: true})
	if dry.Runs != 3 || dry.Blobs != 0 || !equal(dry.RunIDs, []string{"s-old", "f-old", "c-old"}) {
		t.Errorf("Prune(dry run) = %+v, want s-old, f-old, c-old", *dry)
	}
	if dry := prune(t, s, store.PruneParams{Before: now.Add(-time.Hour), Status: trace.RunFailed, DryRun: true}); !equal(dry.RunIDs, []string{"f-old"}) {
		t.Errorf("Prune(dry run, failed) = %+v, want f-old", *dry)
	}
	for _, id := range []string{"s-old", "f-old", "c-old"} {
		wantKept(t, s, id)
	}
	res := prune(t, s, store.PruneParams{Before: now.Add(-time.Hour)})
	if res.Runs != 3 || res.Blobs != 0 {
		t.Errorf("Prune = %+v, want 3 runs, 0 blobs", *res)
	}
	for _, id := range []string{"s-old", "f-old", "c-old"} {
		wantGone(t, s, id)
	}
	for _, id := range []string{"s-new", "w-old", "r-old", "p-old", "s-unsettled"} {
		wantKept(t, s, id)
	}
	// Vacuum gives space back where the backend can; it deletes nothing
	// more and keeps what is left readable.
	if res := prune(t, s, store.PruneParams{Before: now.Add(-time.Hour), Vacuum: true}); res.Runs != 0 {
		t.Errorf("second Prune deleted %d runs", res.Runs)
	}
	wantKept(t, s, "w-old")
	runs, err := s.ListRuns(t.Context(), &store.ListRunsParams{})
	if err != nil || len(runs) != 5 {
		t.Errorf("ListRuns after Prune = %v, %v; want 5 runs", ids(runs), err)
	}
}

func testPruneStatus(t *testing.T, h Harness) {
	s := open(t, h)
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	settledRun(t, s, "s-old", trace.RunSucceeded, old, 0)
	settledRun(t, s, "f-old", trace.RunFailed, old, 0)
	if res := prune(t, s, store.PruneParams{Before: now.Add(-time.Hour), Status: trace.RunFailed}); res.Runs != 1 {
		t.Errorf("Prune(status failed) deleted %d runs, want 1", res.Runs)
	}
	wantGone(t, s, "f-old")
	wantKept(t, s, "s-old")
	if res := prune(t, s, store.PruneParams{Before: now.Add(-time.Hour), Status: trace.RunSucceeded}); res.Runs != 1 {
		t.Errorf("Prune(status succeeded) deleted %d runs, want 1", res.Runs)
	}
	wantGone(t, s, "s-old")
}

func testPruneRetention(t *testing.T, h Harness) {
	s := open(t, h)
	now := time.Now().Truncate(time.Second) // PostgreSQL keeps microseconds
	old := now.Add(-2 * time.Hour)
	settledRun(t, s, "keep-3h", trace.RunSucceeded, old, 3*time.Hour)
	settledRun(t, s, "keep-30m", trace.RunSucceeded, old, 30*time.Minute)
	settledRun(t, s, "default", trace.RunSucceeded, old, 0)
	if res := prune(t, s, store.PruneParams{Before: now.Add(-time.Hour)}); res.Runs != 2 {
		t.Errorf("Prune deleted %d runs, want 2 (keep-30m and default)", res.Runs)
	}
	wantKept(t, s, "keep-3h")
	wantGone(t, s, "keep-30m")
	wantGone(t, s, "default")
	// A run's own longer retention holds even against a cutoff of now.
	if res := prune(t, s, store.PruneParams{Before: now, Now: now}); res.Runs != 0 {
		t.Errorf("Prune(before now) deleted %d runs; keep-3h's retention has not passed", res.Runs)
	}
	wantKept(t, s, "keep-3h")
	// Retention is judged at the caller's Now: a tick before the run's
	// retention ends it is kept, once it has ended (virtual time, an hour
	// ahead) it goes.
	if res := prune(t, s, store.PruneParams{Before: now, Now: old.Add(3 * time.Hour)}); res.Runs != 0 {
		t.Errorf("Prune at the end of keep-3h's retention deleted %d runs, want 0", res.Runs)
	}
	if res := prune(t, s, store.PruneParams{Before: now, Now: old.Add(3*time.Hour + tick)}); res.Runs != 1 {
		t.Errorf("Prune past keep-3h's retention deleted %d runs, want 1", res.Runs)
	}
	wantGone(t, s, "keep-3h")
}

func testPruneBlobs(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	shared := bigJSON("shared", 2*store.DefaultBlobThreshold)
	own := bigJSON("own", 2*store.DefaultBlobThreshold)
	settledRun(t, s, "old", trace.RunSucceeded, old, 0, shared, own, shared)
	settledRun(t, s, "live", trace.RunRunning, time.Time{}, 0, shared)
	res := prune(t, s, store.PruneParams{Before: now.Add(-time.Hour)})
	if res.Runs != 1 || res.Blobs != 1 {
		t.Errorf("Prune = %+v, want 1 run and 1 blob (the one only it referred to)", *res)
	}
	_, err := s.Blob(ctx, sha(own))
	wantErr(t, "Blob of the pruned run's own output", err, store.ErrNotFound)
	if b, err := s.Blob(ctx, sha(shared)); err != nil || string(b) != string(shared) {
		t.Errorf("Blob still referred to by a live run: %d bytes, %v", len(b), err)
	}
	if st := steps(t, s, "live"); len(st) != 2 || string(st[1].Output) != string(shared) {
		t.Errorf("live run's large output lost after Prune")
	}

	// Settle the live run; pruning it deletes the shared blob, stored once.
	r := get(t, s, "live")
	commit(t, s, &store.Transition{RunID: "live", Version: r.Version, Run: &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: old}})
	res = prune(t, s, store.PruneParams{Before: now.Add(-time.Hour)})
	if res.Runs != 1 || res.Blobs != 1 {
		t.Errorf("second Prune = %+v, want 1 run and 1 blob (the same content is one blob)", *res)
	}
	_, err = s.Blob(ctx, sha(shared))
	wantErr(t, "Blob after its last run was pruned", err, store.ErrNotFound)
}
