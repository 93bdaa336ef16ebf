package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// resourcesOf lists rows as "resource@run/key".
func resourcesOf(rows []*store.Invalidation) []string {
	out := make([]string, len(rows))
	for i, v := range rows {
		out[i] = v.Resource + "@" + v.CallKey
	}
	return out
}

func invalidated(t *testing.T, s store.Store, p *store.InvalidatedParams) []*store.Invalidation {
	t.Helper()
	rows, err := s.Invalidated(t.Context(), p)
	if err != nil {
		t.Fatalf("Invalidated(%+v): %v", *p, err)
	}
	return rows
}

// testInvalidated: the registry of invalidated resources keeps every
// field, is idempotent by (tenant, resource, run, call key) — a cleared
// row recorded again stays cleared —, looks up many resources at once,
// keeps tenants apart, clears by resource (and run), and outlives the run
// that made it (Prune leaves it).
func testInvalidated(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	if rows := invalidated(t, s, &store.InvalidatedParams{}); len(rows) != 0 {
		t.Fatalf("a new store has invalidated resources: %v", resourcesOf(rows))
	}
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	first := &store.Invalidation{Tenant: "acme", Resource: "crm://account/7", RunID: "r1", CallKey: "r1/pay/1",
		Premise: "order-confirmed", Reason: "frozen: tool pay is irreversible", At: at}
	rows := []*store.Invalidation{
		first,
		{Tenant: "acme", Resource: "mail://to/a@example.com", RunID: "r1", CallKey: "r1/notify/1", Premise: "order-confirmed", At: at.Add(time.Second)},
		{Tenant: "acme", Resource: "crm://account/7", RunID: "r2", CallKey: "r2/pay/1", Premise: "saga", At: at.Add(2 * time.Second)},
		{Tenant: "globex", Resource: "crm://account/7", RunID: "g1", CallKey: "g1/pay/1", Premise: "p", At: at.Add(3 * time.Second)},
	}
	if err := s.Invalidate(ctx, rows); err != nil {
		t.Fatalf("Invalidate: %v", err)
	}
	// again, with another reason and time: the row is left as it was.
	again := *first
	again.Reason, again.At = "changed", at.Add(time.Hour)
	if err := s.Invalidate(ctx, []*store.Invalidation{&again}); err != nil {
		t.Fatalf("Invalidate again: %v", err)
	}
	if err := s.Invalidate(ctx, nil); err != nil {
		t.Fatalf("Invalidate(nil): %v", err)
	}
	all := invalidated(t, s, &store.InvalidatedParams{Tenant: "acme"})
	if want := []string{"crm://account/7@r1/pay/1", "mail://to/a@example.com@r1/notify/1", "crm://account/7@r2/pay/1"}; !slices.Equal(resourcesOf(all), want) {
		t.Fatalf("Invalidated(acme) = %v, want %v (oldest first, each row once)", resourcesOf(all), want)
	}
	if got := *all[0]; got != *first {
		t.Errorf("row read back = %+v, want %+v (every field, the first record kept)", got, *first)
	}
	tests := []struct {
		p    store.InvalidatedParams
		want []string
	}{
		{store.InvalidatedParams{Tenant: "acme", Resources: []string{"crm://account/7"}}, []string{"crm://account/7@r1/pay/1", "crm://account/7@r2/pay/1"}},
		{store.InvalidatedParams{Tenant: "acme", Resources: []string{"nope", "mail://to/a@example.com"}}, []string{"mail://to/a@example.com@r1/notify/1"}},
		{store.InvalidatedParams{Tenant: "acme", Resources: []string{"nope"}}, nil},
		{store.InvalidatedParams{Tenant: "acme", Limit: 1}, []string{"crm://account/7@r1/pay/1"}},
		{store.InvalidatedParams{Tenant: "globex", Resources: []string{"crm://account/7", "mail://to/a@example.com"}}, []string{"crm://account/7@g1/pay/1"}},
		// "" is the runs without a tenant, never every tenant.
		{store.InvalidatedParams{}, nil},
		{store.InvalidatedParams{Resources: []string{"crm://account/7"}}, nil},
		{store.InvalidatedParams{Tenant: "initech", Resources: []string{"crm://account/7"}}, nil},
	}
	for _, tc := range tests {
		if got := resourcesOf(invalidated(t, s, &tc.p)); !slices.Equal(got, tc.want) {
			t.Errorf("Invalidated(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	tooMany := make([]string, store.MaxInvalidatedLookup+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprint("r", i)
	}
	if _, err := s.Invalidated(ctx, &store.InvalidatedParams{Tenant: "acme", Resources: tooMany}); err == nil {
		t.Errorf("Invalidated of %d resources: no error", len(tooMany))
	}
	// Prune leaves the registry: an invalidation outlives its run.
	settledRun(t, s, "r1", trace.RunFailed, at, 0)
	if res := prune(t, s, store.PruneParams{Before: at.Add(time.Hour)}); res.Runs != 1 {
		t.Fatalf("Prune = %+v, want run r1 pruned", *res)
	}
	if got := invalidated(t, s, &store.InvalidatedParams{Tenant: "acme"}); len(got) != 3 {
		t.Errorf("after Prune of run r1: %v, want its rows kept", resourcesOf(got))
	}
	// clearing: by run, then the rest; another tenant's row stays.
	if n, err := s.ClearInvalidated(ctx, &store.ClearInvalidatedParams{Tenant: "acme", Resource: "crm://account/7", RunID: "r2"}); err != nil || n != 1 {
		t.Fatalf("ClearInvalidated(acme, crm://account/7, r2) = %d, %v; want 1", n, err)
	}
	if n, err := s.ClearInvalidated(ctx, &store.ClearInvalidatedParams{Tenant: "acme", Resource: "crm://account/7"}); err != nil || n != 1 {
		t.Fatalf("ClearInvalidated(acme, crm://account/7) = %d, %v; want 1", n, err)
	}
	if n, err := s.ClearInvalidated(ctx, &store.ClearInvalidatedParams{Tenant: "acme", Resource: "crm://account/7"}); err != nil || n != 0 {
		t.Fatalf("ClearInvalidated of a cleared resource = %d, %v; want 0, nil", n, err)
	}
	if _, err := s.ClearInvalidated(ctx, &store.ClearInvalidatedParams{Tenant: "acme"}); err == nil {
		t.Errorf("ClearInvalidated without a resource: no error")
	}
	if got := resourcesOf(invalidated(t, s, &store.InvalidatedParams{Tenant: "acme"})); !slices.Equal(got, []string{"mail://to/a@example.com@r1/notify/1"}) {
		t.Errorf("acme after clearing = %v", got)
	}
	if got := resourcesOf(invalidated(t, s, &store.InvalidatedParams{Tenant: "globex"})); !slices.Equal(got, []string{"crm://account/7@g1/pay/1"}) {
		t.Errorf("globex after acme cleared = %v, want its row kept", got)
	}
	// recording a cleared row again leaves it cleared (a remediation
	// carried on registers its freezes again); another call's freeze of
	// the resource makes it invalid again.
	if err := s.Invalidate(ctx, rows[:1]); err != nil {
		t.Fatal(err)
	}
	if got := invalidated(t, s, &store.InvalidatedParams{Tenant: "acme", Resources: []string{"crm://account/7"}}); len(got) != 0 {
		t.Errorf("a cleared row recorded again is invalid again: %v", resourcesOf(got))
	}
	if err := s.Invalidate(ctx, []*store.Invalidation{{Tenant: "acme", Resource: "crm://account/7", RunID: "r3", CallKey: "r3/pay/1", Premise: "p"}}); err != nil {
		t.Fatal(err)
	}
	if got := resourcesOf(invalidated(t, s, &store.InvalidatedParams{Tenant: "acme", Resources: []string{"crm://account/7"}})); !slices.Equal(got, []string{"crm://account/7@r3/pay/1"}) {
		t.Errorf("a new freeze of a cleared resource = %v", got)
	}
}
