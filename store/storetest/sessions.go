package storetest

import (
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// testSessions: Sessions lists one row per session id and flow, the one
// with the newest run first, counting its runs and naming its newest;
// runs without a session are in none. Prune with a Session deletes that
// session's finished runs whatever their age and retention, and keeps its
// unfinished ones and every other run.
func testSessions(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	for _, r := range []struct {
		id, flow, session, tenant string
		status                    trace.RunStatus
	}{
		{"r01", "a", "s1", "", trace.RunSucceeded},
		{"r02", "a", "", "", trace.RunSucceeded},
		{"r03", "a", "s2", "t1", trace.RunSucceeded},
		{"r04", "b", "s1", "", trace.RunFailed},
		{"r05", "a", "s1", "", trace.RunWaiting},
	} {
		create(t, s, &store.CreateRunParams{ID: r.id, Flow: r.flow, Session: r.session, Tenant: r.tenant, Status: r.status})
	}
	type row struct {
		id, flow string
		runs     int
		last     string
	}
	list := func(p *store.ListSessionsParams) []row {
		t.Helper()
		got, err := s.Sessions(ctx, p)
		if err != nil {
			t.Fatalf("Sessions(%+v): %v", p, err)
		}
		out := []row{}
		for _, g := range got {
			if g.CreatedAt.IsZero() || g.LastAt.Before(g.CreatedAt) {
				t.Errorf("session %s/%s: created %v, last %v", g.ID, g.Flow, g.CreatedAt, g.LastAt)
			}
			out = append(out, row{g.ID, g.Flow, g.Runs, g.LastRun})
		}
		return out
	}
	for _, tc := range []struct {
		p    *store.ListSessionsParams
		want []row
	}{
		{nil, []row{{"s1", "a", 2, "r05"}, {"s1", "b", 1, "r04"}, {"s2", "a", 1, "r03"}}},
		{&store.ListSessionsParams{Flow: "a"}, []row{{"s1", "a", 2, "r05"}, {"s2", "a", 1, "r03"}}},
		{&store.ListSessionsParams{Tenant: "t1"}, []row{{"s2", "a", 1, "r03"}}},
		{&store.ListSessionsParams{Limit: 1}, []row{{"s1", "a", 2, "r05"}}},
		{&store.ListSessionsParams{Flow: "c"}, []row{}},
	} {
		if got := list(tc.p); !equal(got, tc.want) {
			t.Errorf("Sessions(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}

	// settle r01 long ago with a long retention: a session's deletion
	// does not wait for it.
	res := prune(t, s, store.PruneParams{Session: "s1", DryRun: true})
	if res.Runs != 2 || !equal(res.RunIDs, []string{"r01", "r04"}) {
		t.Errorf("Prune(session s1, dry run) = %+v, want r01 and r04", res)
	}
	res = prune(t, s, store.PruneParams{Session: "s1", Before: time.Unix(1, 0), Now: time.Unix(2, 0)})
	if res.Runs != 2 {
		t.Errorf("Prune(session s1) deleted %d runs, want 2 (r01, r04)", res.Runs)
	}
	for _, id := range []string{"r01", "r04"} {
		if _, err := s.GetRun(ctx, id); err == nil {
			t.Errorf("run %s of session s1 is still there", id)
		}
	}
	for _, id := range []string{"r02", "r03", "r05"} {
		get(t, s, id)
	}
	if got, want := list(nil), []row{{"s1", "a", 1, "r05"}, {"s2", "a", 1, "r03"}}; !equal(got, want) {
		t.Errorf("Sessions after deleting s1's finished runs = %v, want %v", got, want)
	}
}
