package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

func testCreateGet(t *testing.T, h Harness) {
	s := open(t, h)
	before := time.Now().Add(-time.Second)
	r := create(t, s, &store.CreateRunParams{
		ID: "run-1", Flow: "triage", FlowPath: "flows/triage.yaml", FlowHash: "abc123",
		FlowText: []byte("name: triage\n"), Input: json.RawMessage(`{"q":1}`),
		Meta: json.RawMessage(`{"config":"rein.yaml"}`), Session: "sess-1",
		Retention: 48 * time.Hour,
	})
	check := func(what string, r *store.Run) {
		t.Helper()
		if r.ID != "run-1" || r.Flow != "triage" || r.FlowPath != "flows/triage.yaml" || r.FlowHash != "abc123" {
			t.Errorf("%s: identity = %q %q %q %q", what, r.ID, r.Flow, r.FlowPath, r.FlowHash)
		}
		if r.Status != trace.RunPending {
			t.Errorf("%s: Status = %q, want pending", what, r.Status)
		}
		if r.Session != "sess-1" || r.Retention != 48*time.Hour {
			t.Errorf("%s: Session %q Retention %v", what, r.Session, r.Retention)
		}
		if r.LastSeq != 0 {
			t.Errorf("%s: LastSeq = %d, want 0", what, r.LastSeq)
		}
		if r.CreatedAt.Before(before) || r.CreatedAt.After(time.Now().Add(time.Second)) {
			t.Errorf("%s: CreatedAt = %v, not now", what, r.CreatedAt)
		}
		if r.UpdatedAt.IsZero() || !r.SettledAt.IsZero() {
			t.Errorf("%s: UpdatedAt %v SettledAt %v", what, r.UpdatedAt, r.SettledAt)
		}
		if r.LeaseOwner != "" || r.Finished() {
			t.Errorf("%s: LeaseOwner %q Finished %v", what, r.LeaseOwner, r.Finished())
		}
	}
	check("CreateRun", r)
	g := get(t, s, "run-1")
	check("GetRun", g)
	if g.Version != r.Version {
		t.Errorf("GetRun Version = %d, CreateRun returned %d", g.Version, r.Version)
	}
	if !near(g.CreatedAt, r.CreatedAt) {
		t.Errorf("GetRun CreatedAt = %v, CreateRun returned %v", g.CreatedAt, r.CreatedAt)
	}

	w := create(t, s, &store.CreateRunParams{ID: "run-2", Status: trace.RunWaiting})
	if w.Status != trace.RunWaiting || get(t, s, "run-2").Status != trace.RunWaiting {
		t.Errorf("initial Status waiting: got %q", w.Status)
	}
}

func testCreateDuplicateID(t *testing.T, h Harness) {
	s := open(t, h)
	create(t, s, &store.CreateRunParams{ID: "dup", Flow: "a"})
	_, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: "dup", Flow: "b", FlowHash: "x", Input: json.RawMessage(`{}`)})
	wantErr(t, "CreateRun with an existing ID", err, store.ErrConflict)
	if f := get(t, s, "dup").Flow; f != "a" {
		t.Errorf("after duplicate create, Flow = %q, want a", f)
	}
}

func testCreateIdempotent(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	first := create(t, s, &store.CreateRunParams{ID: "a", IdempotencyKey: "key-1", Input: json.RawMessage(`{"n":1}`)})
	if first.IdempotencyKey != "key-1" {
		t.Errorf("IdempotencyKey = %q", first.IdempotencyKey)
	}
	again, created, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "b", Flow: "f", FlowHash: "h", IdempotencyKey: "key-1", Input: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatalf("second CreateRun with the same key: %v", err)
	}
	if created || again.ID != "a" {
		t.Errorf("same key: got run %q created=%v, want run a created=false", again.ID, created)
	}
	if !bytes.Equal(again.Input, first.Input) {
		t.Errorf("same key: Input = %s", again.Input)
	}
	if _, err := s.GetRun(ctx, "b"); err == nil {
		t.Error("same key: run b was created too")
	}
	// The existing run is returned whatever its state.
	tr := &store.Transition{RunID: "a", Version: first.Version, Run: &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: time.Now()}}
	commit(t, s, tr)
	again, created, err = s.CreateRun(ctx, &store.CreateRunParams{ID: "c", Flow: "f", FlowHash: "h", IdempotencyKey: "key-1"})
	if err != nil || created || again.ID != "a" || again.Status != trace.RunSucceeded {
		t.Errorf("same key after settling: run %v created=%v err=%v", again, created, err)
	}

	other, created, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "d", Flow: "f", FlowHash: "h", IdempotencyKey: "key-2"})
	if err != nil || !created || other.ID != "d" {
		t.Errorf("different key: run %v created=%v err=%v, want new run d", other, created, err)
	}
	none, created, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "e", Flow: "f", FlowHash: "h"})
	if err != nil || !created || none.ID != "e" {
		t.Errorf("no key: run %v created=%v err=%v", none, created, err)
	}
	none2, created, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "g", Flow: "f", FlowHash: "h"})
	if err != nil || !created || none2.ID != "g" {
		t.Errorf("second run without a key: run %v created=%v err=%v (an empty key is no key)", none2, created, err)
	}
}

func testCreateLeased(t *testing.T, h Harness) {
	s := open(t, h)
	r := create(t, s, &store.CreateRunParams{ID: "leased", Owner: "worker-1", LeaseTTL: time.Minute, Now: future})
	if r.LeaseOwner != "worker-1" {
		t.Fatalf("LeaseOwner = %q, want worker-1", r.LeaseOwner)
	}
	expiresAt(t, "CreateRun", r.LeaseExpires, future.Add(time.Minute))
	if !r.CreatedAt.Equal(future) {
		t.Errorf("CreatedAt = %v, want the caller's Now %v", r.CreatedAt, future)
	}
	expiresAt(t, "GetRun", get(t, s, "leased").LeaseExpires, future.Add(time.Minute))
	_, err := s.AcquireLease(t.Context(), &store.LeaseParams{RunID: "leased", Owner: "worker-2", TTL: time.Minute, Now: future.Add(time.Minute - tick)})
	wantErr(t, "AcquireLease of a run created leased to another owner", err, store.ErrConflict)
	acquire(t, s, "leased", "worker-2", future.Add(time.Minute), time.Minute)
}

func testRoundTripBytes(t *testing.T, h Harness) {
	s := open(t, h)
	flowText := []byte("# triage\r\nname: triage\t \nsteps:\n  - id: é\n    prompt: \"{{ input.q }}\"   \n\n")
	input := json.RawMessage(`{ "b": 2,  "a": [1, 2.50, "é\u00e9"] }`)
	meta := json.RawMessage("{\"config\" : \"rein.yaml\",\n \"models\":{}}")
	big := bigJSON("run-input", 3*store.DefaultBlobThreshold)
	create(t, s, &store.CreateRunParams{ID: "bytes", Flow: "triage", FlowHash: "0f1e2d3c4b5a", FlowText: flowText, Input: input, Meta: meta})
	create(t, s, &store.CreateRunParams{ID: "big", FlowText: bytes.Repeat(flowText, 1000), Input: big})
	g := get(t, s, "bytes")
	if !bytes.Equal(g.FlowText, flowText) {
		t.Errorf("FlowText = %q, want %q", g.FlowText, flowText)
	}
	if g.FlowHash != "0f1e2d3c4b5a" {
		t.Errorf("FlowHash = %q", g.FlowHash)
	}
	if !bytes.Equal(g.Input, input) {
		t.Errorf("Input = %q, want %q (byte-exact)", g.Input, input)
	}
	if !bytes.Equal(g.Meta, meta) {
		t.Errorf("Meta = %q, want %q (byte-exact)", g.Meta, meta)
	}
	b := get(t, s, "big")
	if !bytes.Equal(b.Input, big) || !bytes.Equal(b.FlowText, bytes.Repeat(flowText, 1000)) {
		t.Errorf("large Input/FlowText did not round-trip (%d, %d bytes)", len(b.Input), len(b.FlowText))
	}
}

func testListRuns(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	// IDs sort in creation order, so a backend may break CreatedAt ties by ID.
	runs := []struct {
		id, flow string
		status   trace.RunStatus
		session  string
	}{
		{"r01", "a", trace.RunPending, "s1"},
		{"r02", "b", trace.RunWaiting, ""},
		{"r03", "a", trace.RunWaiting, "s1"},
		{"r04", "b", trace.RunRunning, "s2"},
		{"r05", "a", trace.RunWaiting, ""},
	}
	for _, r := range runs {
		create(t, s, &store.CreateRunParams{ID: r.id, Flow: r.flow, Status: r.status, Session: r.session})
	}
	tests := []struct {
		p    store.ListRunsParams
		want []string
	}{
		{store.ListRunsParams{}, []string{"r05", "r04", "r03", "r02", "r01"}},
		{store.ListRunsParams{Status: trace.RunWaiting}, []string{"r05", "r03", "r02"}},
		{store.ListRunsParams{Flow: "a"}, []string{"r05", "r03", "r01"}},
		{store.ListRunsParams{Flow: "b", Status: trace.RunWaiting}, []string{"r02"}},
		{store.ListRunsParams{Flow: "c"}, nil},
		{store.ListRunsParams{Status: trace.RunSucceeded}, nil},
		{store.ListRunsParams{Limit: 2}, []string{"r05", "r04"}},
		{store.ListRunsParams{Status: trace.RunWaiting, Limit: 1}, []string{"r05"}},
		{store.ListRunsParams{IDPrefix: "r0"}, []string{"r05", "r04", "r03", "r02", "r01"}},
		{store.ListRunsParams{IDPrefix: "r03"}, []string{"r03"}},
		{store.ListRunsParams{IDPrefix: "r03x"}, nil},
		{store.ListRunsParams{IDPrefix: "r1"}, nil},
		{store.ListRunsParams{IDPrefix: "R0"}, nil},
		{store.ListRunsParams{IDPrefix: "r0", Status: trace.RunWaiting, Limit: 2}, []string{"r05", "r03"}},
		{store.ListRunsParams{IDPrefix: "r0", Flow: "b"}, []string{"r04", "r02"}},
		{store.ListRunsParams{IDPrefix: "%"}, nil},
		{store.ListRunsParams{Session: "s1"}, []string{"r03", "r01"}},
		{store.ListRunsParams{Session: "s1", Flow: "a", Limit: 1}, []string{"r03"}},
		{store.ListRunsParams{Session: "s1", Status: trace.RunWaiting}, []string{"r03"}},
		{store.ListRunsParams{Session: "s2", Flow: "a"}, nil},
		{store.ListRunsParams{Session: "s3"}, nil},
	}
	for _, tc := range tests {
		got, err := s.ListRuns(ctx, &tc.p)
		if err != nil {
			t.Errorf("ListRuns(%+v): %v", tc.p, err)
			continue
		}
		if !equal(ids(got), tc.want) {
			t.Errorf("ListRuns(%+v) = %v, want %v", tc.p, ids(got), tc.want)
		}
	}
	got, err := s.ListRuns(ctx, nil)
	if err != nil || len(got) != 5 {
		t.Errorf("ListRuns(nil) = %v, %v; want all five", ids(got), err)
	}
}

func testListRunsDefaultLimit(t *testing.T, h Harness) {
	s := open(t, h)
	for i := range 105 {
		create(t, s, &store.CreateRunParams{ID: fmt.Sprintf("run-%03d", i)})
	}
	got, err := s.ListRuns(t.Context(), &store.ListRunsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 || got[0].ID != "run-104" {
		t.Errorf("ListRuns with Limit 0: %d runs starting %v, want 100 starting run-104", len(got), ids(got[:min(1, len(got))]))
	}
	got, err = s.ListRuns(t.Context(), &store.ListRunsParams{Limit: 103})
	if err != nil || len(got) != 103 {
		t.Errorf("ListRuns with Limit 103: %d runs, %v", len(got), err)
	}
}

func testNotFound(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	create(t, s, &store.CreateRunParams{ID: "exists"})
	_, err := s.GetRun(ctx, "missing")
	wantErr(t, "GetRun", err, store.ErrNotFound)
	err = s.Commit(ctx, &store.Transition{RunID: "missing", Events: []*trace.Event{event("missing", 1, trace.RunStarted, "")}})
	wantErr(t, "Commit", err, store.ErrNotFound)
	_, err = s.Events(ctx, "missing", 0, 0)
	wantErr(t, "Events", err, store.ErrNotFound)
	_, err = s.Steps(ctx, "missing")
	wantErr(t, "Steps", err, store.ErrNotFound)
	_, err = s.Blob(ctx, sha([]byte("nothing")))
	wantErr(t, "Blob", err, store.ErrNotFound)
	_, err = s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "missing", StepID: "s", Status: store.ApprovalApproved})
	wantErr(t, "DecideApproval of a missing run", err, store.ErrNotFound)
	_, err = s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "exists", StepID: "s", Status: store.ApprovalApproved})
	wantErr(t, "DecideApproval of a missing step", err, store.ErrNotFound)
	_, err = s.AcquireLease(ctx, &store.LeaseParams{RunID: "missing", Owner: "w", TTL: time.Minute, Now: past})
	wantErr(t, "AcquireLease", err, store.ErrNotFound)
	err = s.RenewLease(ctx, &store.LeaseParams{RunID: "missing", Owner: "w", TTL: time.Minute, Now: past})
	wantErr(t, "RenewLease", err, store.ErrNotFound)

	// An existing run without events or steps is empty, not missing.
	if evs, err := s.Events(ctx, "exists", 0, 0); err != nil || len(evs) != 0 {
		t.Errorf("Events of a run without events = %v, %v; want none, nil", evs, err)
	}
	if st, err := s.Steps(ctx, "exists"); err != nil || len(st) != 0 {
		t.Errorf("Steps of a run without steps = %v, %v; want none, nil", st, err)
	}
	if ap, err := s.Approvals(ctx, &store.ListApprovalsParams{RunID: "exists"}); err != nil || len(ap) != 0 {
		t.Errorf("Approvals of a run without approvals = %v, %v; want none, nil", ap, err)
	}
}

func testFinished(t *testing.T, h Harness) {
	s := open(t, h)
	for _, tc := range []struct {
		status   trace.RunStatus
		finished bool
	}{
		{trace.RunPending, false},
		{trace.RunRunning, false},
		{trace.RunWaiting, false},
		{trace.RunSucceeded, true},
		{trace.RunFailed, true},
		{trace.RunCancelled, true},
	} {
		id := "run-" + string(tc.status)
		r := create(t, s, &store.CreateRunParams{ID: id})
		if r.Finished() {
			t.Errorf("new run Finished() = true")
		}
		tr := &store.Transition{RunID: id, Version: r.Version, Run: &store.RunUpdate{Status: tc.status}}
		commit(t, s, tr)
		g := get(t, s, id)
		if g.Status != tc.status || g.Finished() != tc.finished {
			t.Errorf("run committed as %s: Status %q Finished() = %v, want %v", tc.status, g.Status, g.Finished(), tc.finished)
		}
	}
}
