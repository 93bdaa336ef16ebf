package postgres

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// TestClaimersShareRuns: several workers, each with its own pool (as
// separate rein processes would have), claim and advance ready runs; every
// run is claimed by exactly one of them, and each claim's version commits.
func TestClaimersShareRuns(t *testing.T) {
	t.Parallel()
	schema := testSchema(t)
	seed := openTest(t, schema, nil)
	defer seed.Close()
	ctx := t.Context()
	const runs, workers = 120, 4
	for i := range runs {
		if _, _, err := seed.CreateRun(ctx, &store.CreateRunParams{ID: fmt.Sprintf("run-%03d", i), Flow: "f"}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu      sync.Mutex
		owner   = map[string]string{}
		perWork = map[string]int{}
		wg      sync.WaitGroup
	)
	for w := range workers {
		name := fmt.Sprintf("worker-%d", w)
		s := openTest(t, schema, &Options{MaxConns: 2})
		defer s.Close()
		wg.Go(func() {
			for {
				got, err := s.ClaimRuns(ctx, &store.ClaimParams{Owner: name, TTL: time.Minute, Limit: 3, Now: time.Now()})
				if err != nil {
					t.Errorf("%s: ClaimRuns: %v", name, err)
					return
				}
				if len(got) == 0 {
					return
				}
				for _, r := range got {
					mu.Lock()
					if prev, ok := owner[r.ID]; ok {
						t.Errorf("%s claimed by %s and %s", r.ID, prev, name)
					}
					owner[r.ID] = name
					perWork[name]++
					mu.Unlock()
					// Advance the run to done on the claim's version.
					tr := &store.Transition{RunID: r.ID, Version: r.Version,
						Events: []*trace.Event{{Seq: 1, Kind: trace.RunSettled, Status: string(trace.RunSucceeded)}},
						Run:    &store.RunUpdate{Status: trace.RunSucceeded}}
					if err := s.Commit(ctx, tr); err != nil {
						t.Errorf("%s: Commit %s on its claim: %v", name, r.ID, err)
					}
					if err := s.ReleaseLease(ctx, r.ID, name); err != nil {
						t.Errorf("%s: ReleaseLease %s: %v", name, r.ID, err)
					}
				}
			}
		})
	}
	wg.Wait()
	if len(owner) != runs {
		t.Errorf("%d runs claimed, want %d", len(owner), runs)
	}
	t.Logf("runs per worker: %v", perWork)
	left, err := seed.ListRuns(ctx, &store.ListRunsParams{Status: trace.RunPending})
	if err != nil || len(left) != 0 {
		t.Errorf("runs still pending: %d, %v", len(left), err)
	}
}

// TestDeadWorkerLosesRuns: a worker that stops renewing loses its runs to
// another worker once the leases expire, and its late commit is refused.
// Two stores stand for two processes; each call passes its process's
// clock, here virtual: B's reads the expiry of A's leases.
func TestDeadWorkerLosesRuns(t *testing.T) {
	t.Parallel()
	schema := testSchema(t)
	a := openTest(t, schema, nil)
	defer a.Close()
	b := openTest(t, schema, nil)
	defer b.Close()
	ctx := t.Context()
	for i := range 3 {
		if _, _, err := a.CreateRun(ctx, &store.CreateRunParams{ID: fmt.Sprintf("run-%d", i), Flow: "f"}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	claimedA, err := a.ClaimRuns(ctx, &store.ClaimParams{Owner: "A", TTL: time.Second, Limit: 10, Now: now})
	if err != nil || len(claimedA) != 3 {
		t.Fatalf("A claimed %d runs, %v", len(claimedA), err)
	}
	if got, err := b.ClaimRuns(ctx, &store.ClaimParams{Owner: "B", TTL: time.Minute, Limit: 10, Now: now.Add(time.Second - time.Microsecond)}); err != nil || len(got) != 0 {
		t.Fatalf("B claimed %d runs A holds (%v)", len(got), err)
	}
	now = now.Add(time.Second) // A "died": no heartbeat, and its leases expire
	claimedB, err := b.ClaimRuns(ctx, &store.ClaimParams{Owner: "B", TTL: time.Minute, Limit: 10, Now: now})
	if err != nil || len(claimedB) != 3 {
		t.Fatalf("after A's leases expired, B claimed %d runs, %v", len(claimedB), err)
	}
	for _, r := range claimedA {
		err := a.Commit(ctx, &store.Transition{RunID: r.ID, Version: r.Version, Events: []*trace.Event{{Seq: 1, Kind: trace.RunStarted}}})
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("late commit by A on %s: err = %v, want ErrConflict", r.ID, err)
		}
		if err := a.RenewLease(ctx, &store.LeaseParams{RunID: r.ID, Owner: "A", Now: now}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("late renew by A on %s: err = %v, want ErrConflict", r.ID, err)
		}
	}
	for _, r := range claimedB {
		if err := b.Commit(ctx, &store.Transition{RunID: r.ID, Version: r.Version, Events: []*trace.Event{{Seq: 1, Kind: trace.RunStarted}}}); err != nil {
			t.Errorf("B's commit on %s: %v", r.ID, err)
		}
	}
}
