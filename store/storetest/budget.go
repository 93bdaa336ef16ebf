package storetest

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/store"
)

// spendOf returns tenant's use of day (zero when it has none).
func spendOf(t *testing.T, s store.Store, day, tenant string) store.Spend {
	t.Helper()
	all, err := s.Spend(t.Context(), day, tenant)
	if err != nil {
		t.Fatalf("Spend(%s, %s): %v", day, tenant, err)
	}
	if len(all) > 1 {
		t.Fatalf("Spend(%s, %s): %d rows for one tenant", day, tenant, len(all))
	}
	if len(all) == 0 {
		return store.Spend{}
	}
	return *all[0]
}

// testBudget: a reservation counts once per key, settling replaces the
// reserved amounts by the used ones, a retry of a settled key reserves
// again without losing what it used, a reservation past a limit is a
// budget error naming it (and writes nothing), ReleaseRun closes a run's
// open reservations, and tenants and days are apart.
func testBudget(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	const day = "2026-03-01"
	reserve := func(key, run string, tokens, cost, limTokens, limCost int64) (*store.Reservation, error) {
		return s.Reserve(ctx, &store.ReserveParams{Tenant: "acme", Day: day, Key: key, RunID: run,
			Tokens: tokens, Cost: cost, LimitTokens: limTokens, LimitCost: limCost})
	}
	r, err := reserve("r1/a/1", "r1", 400, 4000, 1000, 10000)
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	if r.State != store.Reserved || r.ReservedTokens != 400 || r.Day != day || r.RunID != "r1" {
		t.Fatalf("Reserve = %+v", r)
	}
	// the same call again: the open reservation, counted once.
	if r, err = reserve("r1/a/1", "r1", 400, 4000, 1000, 10000); err != nil || r.State != store.Reserved {
		t.Fatalf("Reserve again = %+v, %v", r, err)
	}
	if sp := spendOf(t, s, day, "acme"); sp.Tokens != 400 || sp.Cost != 4000 || sp.Open != 1 || sp.ReservedTokens != 400 {
		t.Fatalf("spend after one reservation reserved twice = %+v, want 400 tokens, 4000 cost, 1 open", sp)
	}
	// 400 + 700 > 1000: refused, nothing written.
	_, err = reserve("r1/b/1", "r1", 700, 10, 1000, 10000)
	var be *store.BudgetError
	if !errors.As(err, &be) || fault.ClassOf(err) != fault.Budget || fault.BudgetOf(err) != "tokens_per_day" {
		t.Fatalf("Reserve past the token limit = %v (class %s, budget %q), want a budget error on tokens_per_day", err, fault.ClassOf(err), fault.BudgetOf(err))
	}
	if be.Tenant != "acme" || be.Day != day || be.Limit != 1000 || be.Used != 400 || be.Asked != 700 {
		t.Errorf("BudgetError = %+v", be)
	}
	for _, want := range []string{"acme", day, "tokens_per_day", "1000", "400"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("budget error %q does not name %q", err, want)
		}
	}
	if fault.Retryable(err) {
		t.Errorf("a budget error is retryable: %v", err)
	}
	if sp := spendOf(t, s, day, "acme"); sp.Tokens != 400 || sp.Open != 1 {
		t.Fatalf("a refused reservation was counted: %+v", sp)
	}
	// the cost limit is checked too.
	if _, err = reserve("r1/c/1", "r1", 10, 7000, 1000, 10000); fault.BudgetOf(err) != "cost_per_day" {
		t.Fatalf("Reserve past the cost limit = %v, want cost_per_day", err)
	}
	// settle: the used amounts replace the reserved ones.
	if err := s.Settle(ctx, &store.SettleParams{Tenant: "acme", Key: "r1/a/1", Tokens: 120, Cost: 900}); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if sp := spendOf(t, s, day, "acme"); sp.Tokens != 120 || sp.Cost != 900 || sp.Open != 0 || sp.ReservedTokens != 0 {
		t.Fatalf("spend after settling = %+v, want 120 tokens, 900 cost, none open", sp)
	}
	// the settled key tried again: reserved again, what it used stays.
	if r, err = reserve("r1/a/1", "r1", 400, 4000, 1000, 10000); err != nil || r.State != store.Reserved || r.SettledTokens != 120 {
		t.Fatalf("Reserve of a settled key = %+v, %v", r, err)
	}
	if sp := spendOf(t, s, day, "acme"); sp.Tokens != 520 || sp.Cost != 4900 {
		t.Fatalf("spend after a retry's reservation = %+v, want 520 tokens, 4900 cost", sp)
	}
	if err := s.Settle(ctx, &store.SettleParams{Tenant: "acme", Key: "r1/a/1", Tokens: 30, Cost: 100}); err != nil {
		t.Fatalf("Settle the retry: %v", err)
	}
	if sp := spendOf(t, s, day, "acme"); sp.Tokens != 150 || sp.Cost != 1000 {
		t.Fatalf("spend after two tries settled = %+v, want 150 tokens, 1000 cost", sp)
	}
	if err := s.Settle(ctx, &store.SettleParams{Tenant: "acme", Key: "nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Settle of an unknown key = %v, want ErrNotFound", err)
	}
	// a crashed run's open reservations are released; another run's stay.
	for _, k := range []string{"r2/a/1", "r2/b/1"} {
		if _, err := reserve(k, "r2", 100, 100, 0, 0); err != nil {
			t.Fatalf("Reserve %s: %v", k, err)
		}
	}
	if _, err := reserve("r3/a/1", "r3", 50, 50, 0, 0); err != nil {
		t.Fatalf("Reserve r3: %v", err)
	}
	if n, err := s.ReleaseRun(ctx, "r2"); err != nil || n != 2 {
		t.Fatalf("ReleaseRun(r2) = %d, %v, want 2", n, err)
	}
	if n, err := s.ReleaseRun(ctx, "r2"); err != nil || n != 0 {
		t.Fatalf("ReleaseRun(r2) again = %d, %v, want 0", n, err)
	}
	if sp := spendOf(t, s, day, "acme"); sp.Tokens != 200 || sp.Open != 1 || sp.ReservedTokens != 50 {
		t.Fatalf("spend after releasing r2 = %+v, want 200 tokens (150 settled + r3's 50), 1 open", sp)
	}
	// the released call resumed: reserved again under the limit.
	if _, err := reserve("r2/a/1", "r2", 900, 0, 1000, 0); fault.BudgetOf(err) != "tokens_per_day" {
		t.Fatalf("Reserve of a released key past the limit = %v, want tokens_per_day", err)
	}
	// tenants and days are apart.
	if _, err := s.Reserve(ctx, &store.ReserveParams{Tenant: "globex", Day: day, Key: "r1/a/1", RunID: "g1", Tokens: 999, LimitTokens: 1000}); err != nil {
		t.Fatalf("another tenant's reservation under the same key: %v", err)
	}
	if _, err := s.Reserve(ctx, &store.ReserveParams{Tenant: "acme", Day: "2026-03-02", Key: "next", RunID: "r4", Tokens: 999, LimitTokens: 1000}); err != nil {
		t.Fatalf("the next day's reservation: %v", err)
	}
	all, err := s.Spend(ctx, day, "")
	if err != nil || len(all) != 2 || all[0].Tenant != "acme" || all[1].Tenant != "globex" || all[1].Tokens != 999 {
		t.Fatalf("Spend(%s) of every tenant = %+v, %v", day, all, err)
	}
	if _, err := s.Reserve(ctx, &store.ReserveParams{Tenant: "acme", Day: day}); err == nil {
		t.Error("Reserve without a key succeeded")
	}
}

// testBudgetConcurrent: reservers racing for one tenant's day never pass
// its limit together.
func testBudgetConcurrent(t *testing.T, h Harness) {
	s := open(t, h)
	const n, each, limit = 24, 10, 95
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted, refused := 0, 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Reserve(t.Context(), &store.ReserveParams{Tenant: "acme", Day: "2026-03-01",
				Key: "k" + string(rune('a'+i)), RunID: "r", Tokens: each, LimitTokens: limit})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				granted++
			case fault.ClassOf(err) == fault.Budget:
				refused++
			default:
				t.Errorf("Reserve: %v", err)
			}
		}()
	}
	wg.Wait()
	if granted != limit/each || refused != n-limit/each {
		t.Errorf("%d reservations of %d under a limit of %d: %d granted, %d refused; want %d granted", n, each, limit, granted, refused, limit/each)
	}
	if sp := spendOf(t, s, "2026-03-01", "acme"); sp.Tokens > limit || sp.Tokens != int64(granted*each) {
		t.Errorf("spend = %+v: want %d tokens, never over %d", sp, granted*each, limit)
	}
}
