package storetest

import (
	"slices"
	"testing"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// testTenants: a run keeps the tenant it was created with, by CreateRun
// and by a creating Commit, and ListRuns keeps a tenant's runs and pages
// through them newest first with Before.
func testTenants(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	for _, r := range []struct{ id, tenant, flow string }{
		{"t01", "acme", "a"}, {"t02", "globex", "a"}, {"t03", "acme", "b"}, {"t04", "", "a"}, {"t05", "acme", "a"},
	} {
		create(t, s, &store.CreateRunParams{ID: r.id, Flow: r.flow, Tenant: r.tenant})
	}
	// a run made by its first transition keeps its tenant too.
	commit(t, s, &store.Transition{RunID: "t06", Create: &store.CreateRunParams{ID: "t06", Flow: "a", FlowHash: "sha256:a",
		Input: []byte(`{}`), Tenant: "acme", Status: trace.RunRunning},
		Events: []*trace.Event{event("t06", 1, trace.RunStarted, "")}})
	if g := get(t, s, "t06"); g.Tenant != "acme" {
		t.Errorf("run created by Commit: Tenant %q, want acme", g.Tenant)
	}
	if g := get(t, s, "t02"); g.Tenant != "globex" {
		t.Errorf("GetRun(t02).Tenant = %q, want globex", g.Tenant)
	}
	if g := get(t, s, "t04"); g.Tenant != "" {
		t.Errorf("GetRun(t04).Tenant = %q, want none", g.Tenant)
	}
	tests := []struct {
		p    store.ListRunsParams
		want []string
	}{
		{store.ListRunsParams{Tenant: "acme"}, []string{"t06", "t05", "t03", "t01"}},
		{store.ListRunsParams{Tenant: "acme", Flow: "a"}, []string{"t06", "t05", "t01"}},
		{store.ListRunsParams{Tenant: "acme", Status: trace.RunRunning}, []string{"t06"}},
		{store.ListRunsParams{Tenant: "acme", Limit: 2}, []string{"t06", "t05"}},
		{store.ListRunsParams{Tenant: "acme", Before: "t05", Limit: 2}, []string{"t03", "t01"}},
		{store.ListRunsParams{Tenant: "acme", Before: "t01"}, nil},
		{store.ListRunsParams{Tenant: "acme", Before: "nope"}, nil},
		{store.ListRunsParams{Tenant: "globex"}, []string{"t02"}},
		{store.ListRunsParams{Tenant: "initech"}, nil},
		{store.ListRunsParams{Before: "t03"}, []string{"t02", "t01"}},
		{store.ListRunsParams{Before: "t04", Flow: "a", Limit: 1}, []string{"t02"}},
	}
	for _, tc := range tests {
		got, err := s.ListRuns(ctx, &tc.p)
		if err != nil {
			t.Errorf("ListRuns(%+v): %v", tc.p, err)
			continue
		}
		if !slices.Equal(ids(got), tc.want) {
			t.Errorf("ListRuns(%+v) = %v, want %v", tc.p, ids(got), tc.want)
		}
		for _, r := range got {
			if tc.p.Tenant != "" && r.Tenant != tc.p.Tenant {
				t.Errorf("ListRuns(%+v): run %s of tenant %q", tc.p, r.ID, r.Tenant)
			}
		}
	}
}
