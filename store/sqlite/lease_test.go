package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// TestFinalCommitDropsLease: a Commit that settles a run drops its lease (a
// finished run has no writer to protect), the owner's ReleaseLease after it
// is a no-op, and a lease taken again afterwards is released for real.
func TestFinalCommitDropsLease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "run", Flow: "f", Status: trace.RunRunning, Owner: "A", LeaseTTL: time.Minute, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tr := &store.Transition{RunID: "run", Version: r.Version, Run: &store.RunUpdate{Status: trace.RunWaiting}}
	if err := s.Commit(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.GetRun(ctx, "run"); g.LeaseOwner != "A" {
		t.Fatalf("a non-final commit dropped the lease (owner %q)", g.LeaseOwner)
	}
	tr = &store.Transition{RunID: "run", Version: tr.Version, Run: &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: time.Now()}}
	if err := s.Commit(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.GetRun(ctx, "run"); g.LeaseOwner != "" || !g.LeaseExpires.IsZero() || g.Status != trace.RunSucceeded {
		t.Fatalf("after the final commit: owner %q expires %v status %s", g.LeaseOwner, g.LeaseExpires, g.Status)
	}
	batches := s.w.batches.Load()
	if err := s.ReleaseLease(ctx, "run", "A"); err != nil {
		t.Fatal(err)
	}
	if n := s.w.batches.Load() - batches; n != 0 {
		t.Errorf("ReleaseLease after the final commit took %d transactions, want 0", n)
	}
	// Leased again (by anyone), the release is a real one.
	if _, err := s.AcquireLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseLease(ctx, "run", "B"); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.GetRun(ctx, "run"); g.LeaseOwner != "" {
		t.Fatalf("ReleaseLease by B after AcquireLease left owner %q", g.LeaseOwner)
	}
}
