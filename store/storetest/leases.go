package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

func acquire(t *testing.T, s store.Store, runID, owner string, ttl time.Duration) *store.Run {
	t.Helper()
	r, err := s.AcquireLease(t.Context(), &store.LeaseParams{RunID: runID, Owner: owner, TTL: ttl})
	if err != nil {
		t.Fatalf("AcquireLease(%s, %s): %v", runID, owner, err)
	}
	if r.ID != runID || r.LeaseOwner != owner {
		t.Fatalf("AcquireLease(%s, %s) returned run %q owned by %q", runID, owner, r.ID, r.LeaseOwner)
	}
	return r
}

// expiresIn checks that d from now is about want.
func expiresIn(t *testing.T, what string, at time.Time, want time.Duration) {
	t.Helper()
	if d := time.Until(at); d < want-10*time.Second || d > want+time.Second {
		t.Errorf("%s: lease expires in %v, want about %v", what, d, want)
	}
}

func testLease(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	r := create(t, s, &store.CreateRunParams{ID: "run"})
	a := acquire(t, s, "run", "A", time.Minute)
	if a.Version != r.Version+1 {
		t.Errorf("AcquireLease: Version = %d, want %d", a.Version, r.Version+1)
	}
	expiresIn(t, "AcquireLease", a.LeaseExpires, time.Minute)
	if g := get(t, s, "run"); g.LeaseOwner != "A" || g.Version != a.Version || !near(g.LeaseExpires, a.LeaseExpires) {
		t.Errorf("GetRun after AcquireLease: owner %q version %d expires %v", g.LeaseOwner, g.Version, g.LeaseExpires)
	}

	_, err := s.AcquireLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: time.Minute})
	wantErr(t, "AcquireLease by a second owner", err, store.ErrConflict)
	if g := get(t, s, "run"); g.LeaseOwner != "A" || g.Version != a.Version {
		t.Errorf("a refused AcquireLease changed the run: owner %q version %d", g.LeaseOwner, g.Version)
	}

	a2 := acquire(t, s, "run", "A", time.Minute)
	if a2.Version != a.Version+1 {
		t.Errorf("AcquireLease by the holder: Version = %d, want %d", a2.Version, a.Version+1)
	}

	if err := s.RenewLease(ctx, &store.LeaseParams{RunID: "run", Owner: "A", TTL: 5 * time.Minute}); err != nil {
		t.Fatalf("RenewLease by the holder: %v", err)
	}
	g := get(t, s, "run")
	expiresIn(t, "RenewLease", g.LeaseExpires, 5*time.Minute)
	if g.Version != a2.Version {
		t.Errorf("RenewLease changed the Version from %d to %d: a heartbeat would conflict with the owner's commits", a2.Version, g.Version)
	}
	// The holder commits on the version it acquired, while renewing.
	commit(t, s, &store.Transition{RunID: "run", Version: a2.Version, Events: []*trace.Event{event("run", 1, trace.RunStarted, "")}})

	err = s.RenewLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: time.Minute})
	wantErr(t, "RenewLease by a non-holder", err, store.ErrConflict)
	if err := s.ReleaseLease(ctx, "run", "B"); err != nil {
		t.Errorf("ReleaseLease by a non-holder: %v, want nil", err)
	}
	if g := get(t, s, "run"); g.LeaseOwner != "A" {
		t.Fatalf("ReleaseLease by B dropped A's lease (owner now %q)", g.LeaseOwner)
	}
	if err := s.ReleaseLease(ctx, "run", "A"); err != nil {
		t.Fatalf("ReleaseLease by the holder: %v", err)
	}
	if g := get(t, s, "run"); g.LeaseOwner != "" {
		t.Errorf("after ReleaseLease, LeaseOwner = %q", g.LeaseOwner)
	}
	if err := s.ReleaseLease(ctx, "run", "A"); err != nil {
		t.Errorf("releasing a released lease: %v, want nil", err)
	}
	b := acquire(t, s, "run", "B", time.Minute)
	// A, still holding its old version, can no longer commit.
	err = s.Commit(ctx, &store.Transition{RunID: "run", Version: a2.Version + 1, Events: []*trace.Event{event("run", 2, trace.StepStarted, "a")}})
	wantErr(t, "Commit by the previous holder", err, store.ErrConflict)
	commit(t, s, &store.Transition{RunID: "run", Version: b.Version, Events: []*trace.Event{event("run", 2, trace.StepStarted, "b")}})
}

func testLeaseExpiry(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	create(t, s, &store.CreateRunParams{ID: "run"})
	a := acquire(t, s, "run", "A", 50*time.Millisecond)
	time.Sleep(80 * time.Millisecond)
	b := acquire(t, s, "run", "B", time.Minute)
	if b.Version != a.Version+1 {
		t.Errorf("AcquireLease after expiry: Version %d, want %d", b.Version, a.Version+1)
	}
	err := s.RenewLease(ctx, &store.LeaseParams{RunID: "run", Owner: "A", TTL: time.Minute})
	wantErr(t, "RenewLease after the lease was taken over", err, store.ErrConflict)
	if err := s.ReleaseLease(ctx, "run", "A"); err != nil {
		t.Errorf("ReleaseLease of a lost lease: %v, want nil", err)
	}
	if g := get(t, s, "run"); g.LeaseOwner != "B" {
		t.Errorf("after A released a lost lease, owner = %q, want B", g.LeaseOwner)
	}
	err = s.Commit(ctx, &store.Transition{RunID: "run", Version: a.Version, Events: []*trace.Event{event("run", 1, trace.RunStarted, "")}})
	wantErr(t, "Commit by the holder of an expired lease", err, store.ErrConflict)
	commit(t, s, &store.Transition{RunID: "run", Version: b.Version, Events: []*trace.Event{event("run", 1, trace.RunStarted, "")}})
}

func claim(t *testing.T, s store.Store, owner string, ttl time.Duration, limit int) []*store.Run {
	t.Helper()
	runs, err := s.ClaimRuns(t.Context(), &store.ClaimParams{Owner: owner, TTL: ttl, Limit: limit})
	if err != nil {
		t.Fatalf("ClaimRuns(%s, %d): %v", owner, limit, err)
	}
	return runs
}

func testClaimRuns(t *testing.T, h Harness) {
	s := open(t, h)
	versions := map[string]int64{}
	for _, p := range []store.CreateRunParams{
		{ID: "c1", Status: trace.RunPending},
		{ID: "c2", Status: trace.RunRunning},
		{ID: "c3", Status: trace.RunWaiting},
		{ID: "c4", Status: trace.RunSucceeded},
		{ID: "c5", Owner: "X", LeaseTTL: time.Minute},
		{ID: "c6", Owner: "X", LeaseTTL: time.Millisecond},
		{ID: "c7", Status: trace.RunFailed},
		{ID: "c8", Status: trace.RunCancelled},
		{ID: "c9", Status: trace.RunRunning, Owner: "Y", LeaseTTL: time.Minute},
	} {
		versions[p.ID] = create(t, s, &p).Version
	}
	time.Sleep(10 * time.Millisecond) // c6's lease expires
	got := claim(t, s, "W", time.Minute, 10)
	if !equal(ids(got), []string{"c1", "c2", "c6"}) {
		t.Fatalf("ClaimRuns = %v, want the ready runs oldest first [c1 c2 c6]", ids(got))
	}
	for _, r := range got {
		if r.LeaseOwner != "W" || r.Version != versions[r.ID]+1 {
			t.Errorf("claimed %s: owner %q version %d (was %d)", r.ID, r.LeaseOwner, r.Version, versions[r.ID])
		}
		expiresIn(t, "claimed "+r.ID, r.LeaseExpires, time.Minute)
		if g := get(t, s, r.ID); g.LeaseOwner != "W" || g.Version != r.Version {
			t.Errorf("GetRun(%s) after the claim: owner %q version %d", r.ID, g.LeaseOwner, g.Version)
		}
	}
	if g := get(t, s, "c5"); g.LeaseOwner != "X" {
		t.Errorf("c5 lease owner %q, want X kept", g.LeaseOwner)
	}
	if again := claim(t, s, "V", time.Minute, 10); len(again) != 0 {
		t.Errorf("second ClaimRuns = %v, want none", ids(again))
	}
}

func testClaimRunsLimit(t *testing.T, h Harness) {
	s := open(t, h)
	for i := range 5 {
		create(t, s, &store.CreateRunParams{ID: fmt.Sprintf("p%d", i)})
	}
	for _, want := range [][]string{{"p0", "p1"}, {"p2", "p3"}, {"p4"}, nil} {
		if got := ids(claim(t, s, "W", time.Minute, 2)); !equal(got, want) {
			t.Errorf("ClaimRuns(limit 2) = %v, want %v", got, want)
		}
	}
}

func testClaimRunsConcurrent(t *testing.T, h Harness) {
	s := open(t, h)
	const runs, claimers = 40, 4
	for i := range runs {
		create(t, s, &store.CreateRunParams{ID: fmt.Sprintf("run-%02d", i)})
	}
	var (
		mu    sync.Mutex
		owner = map[string]string{}
		wg    sync.WaitGroup
	)
	for c := range claimers {
		name := fmt.Sprintf("claimer-%d", c)
		wg.Go(func() {
			for {
				got, err := s.ClaimRuns(t.Context(), &store.ClaimParams{Owner: name, TTL: time.Minute, Limit: 3})
				if err != nil {
					t.Errorf("%s: ClaimRuns: %v", name, err)
					return
				}
				if len(got) == 0 {
					return
				}
				if len(got) > 3 {
					t.Errorf("%s: ClaimRuns(limit 3) returned %d", name, len(got))
				}
				mu.Lock()
				for _, r := range got {
					if prev, ok := owner[r.ID]; ok {
						t.Errorf("%s claimed by both %s and %s", r.ID, prev, name)
					}
					owner[r.ID] = name
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(owner) != runs {
		t.Errorf("%d runs claimed, want %d", len(owner), runs)
	}
	for id, name := range owner {
		if g := get(t, s, id); g.LeaseOwner != name {
			t.Errorf("%s: lease owner %q, claimed by %s", id, g.LeaseOwner, name)
		}
	}
}

// testFinalCommitDropsLease: a run that reaches a final status holds no
// lease; a non-final commit keeps it.
func testFinalCommitDropsLease(t *testing.T, h Harness) {
	s := open(t, h)
	create(t, s, &store.CreateRunParams{ID: "run"})
	a := acquire(t, s, "run", "A", time.Minute)
	tr := &store.Transition{RunID: "run", Version: a.Version, Events: []*trace.Event{event("run", 1, trace.StepStarted, "a")},
		Run: &store.RunUpdate{Status: trace.RunRunning}}
	commit(t, s, tr)
	if g := get(t, s, "run"); g.LeaseOwner != "A" {
		t.Fatalf("a running commit dropped the lease: owner %q", g.LeaseOwner)
	}
	commit(t, s, &store.Transition{RunID: "run", Version: tr.Version, Events: []*trace.Event{event("run", 2, trace.RunSettled, "")},
		Run: &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: time.Now()}})
	if g := get(t, s, "run"); g.LeaseOwner != "" || !g.LeaseExpires.IsZero() {
		t.Fatalf("a finished run still leased: owner %q until %v", g.LeaseOwner, g.LeaseExpires)
	}
	if err := s.ReleaseLease(t.Context(), "run", "A"); err != nil {
		t.Fatalf("ReleaseLease after the final commit: %v", err)
	}
}

// TakeFrom takes an unexpired lease from that owner only; the owner it was
// taken from has lost it.
func testLeaseTakeFrom(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	create(t, s, &store.CreateRunParams{ID: "run"})
	a := acquire(t, s, "run", "A", time.Hour)
	_, err := s.AcquireLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: time.Minute, TakeFrom: "C"})
	wantErr(t, "AcquireLease taking from an owner that does not hold it", err, store.ErrConflict)
	b, err := s.AcquireLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: time.Minute, TakeFrom: "A"})
	if err != nil {
		t.Fatalf("AcquireLease taking from the holder: %v", err)
	}
	if b.LeaseOwner != "B" || b.Version != a.Version+1 {
		t.Errorf("taken lease: owner %q version %d, want B at %d", b.LeaseOwner, b.Version, a.Version+1)
	}
	expiresIn(t, "taken lease", b.LeaseExpires, time.Minute)
	err = s.RenewLease(ctx, &store.LeaseParams{RunID: "run", Owner: "A", TTL: time.Minute})
	wantErr(t, "RenewLease by the owner it was taken from", err, store.ErrConflict)
	err = s.Commit(ctx, &store.Transition{RunID: "run", Version: a.Version, Events: []*trace.Event{event("run", 1, trace.RunStarted, "")}})
	wantErr(t, "Commit by the owner it was taken from", err, store.ErrConflict)
}
