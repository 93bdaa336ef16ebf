package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// The lease cases run on virtual time: every call passes its Now, far
// from the real clock (in the past and in the future), so a store that
// read its own clock would disagree with them at once, and no case waits
// for a lease to lapse.
var (
	past   = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	future = time.Date(2101, 2, 3, 4, 5, 6, 0, time.UTC)
)

// tick is the smallest step of time every backend keeps (PostgreSQL's
// timestamps hold microseconds).
const tick = time.Microsecond

func acquire(t *testing.T, s store.Store, runID, owner string, now time.Time, ttl time.Duration) *store.Run {
	t.Helper()
	r, err := s.AcquireLease(t.Context(), &store.LeaseParams{RunID: runID, Owner: owner, TTL: ttl, Now: now})
	if err != nil {
		t.Fatalf("AcquireLease(%s, %s at %v): %v", runID, owner, now, err)
	}
	if r.ID != runID || r.LeaseOwner != owner {
		t.Fatalf("AcquireLease(%s, %s) returned run %q owned by %q", runID, owner, r.ID, r.LeaseOwner)
	}
	return r
}

// expiresAt checks that a lease expires at exactly want.
func expiresAt(t *testing.T, what string, at, want time.Time) {
	t.Helper()
	if !at.Equal(want) {
		t.Errorf("%s: lease expires at %v, want %v (the caller's Now + TTL)", what, at.UTC(), want.UTC())
	}
}

func testLease(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	now := past
	r := create(t, s, &store.CreateRunParams{ID: "run"})
	a := acquire(t, s, "run", "A", now, time.Minute)
	if a.Version != r.Version+1 {
		t.Errorf("AcquireLease: Version = %d, want %d", a.Version, r.Version+1)
	}
	expiresAt(t, "AcquireLease", a.LeaseExpires, now.Add(time.Minute))
	if g := get(t, s, "run"); g.LeaseOwner != "A" || g.Version != a.Version || !g.LeaseExpires.Equal(a.LeaseExpires) {
		t.Errorf("GetRun after AcquireLease: owner %q version %d expires %v", g.LeaseOwner, g.Version, g.LeaseExpires)
	}

	_, err := s.AcquireLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: time.Minute, Now: now})
	wantErr(t, "AcquireLease by a second owner", err, store.ErrConflict)
	if g := get(t, s, "run"); g.LeaseOwner != "A" || g.Version != a.Version {
		t.Errorf("a refused AcquireLease changed the run: owner %q version %d", g.LeaseOwner, g.Version)
	}

	a2 := acquire(t, s, "run", "A", now, time.Minute)
	if a2.Version != a.Version+1 {
		t.Errorf("AcquireLease by the holder: Version = %d, want %d", a2.Version, a.Version+1)
	}

	if err := s.RenewLease(ctx, &store.LeaseParams{RunID: "run", Owner: "A", TTL: 5 * time.Minute, Now: now.Add(time.Second)}); err != nil {
		t.Fatalf("RenewLease by the holder: %v", err)
	}
	g := get(t, s, "run")
	expiresAt(t, "RenewLease", g.LeaseExpires, now.Add(time.Second+5*time.Minute))
	if g.Version != a2.Version {
		t.Errorf("RenewLease changed the Version from %d to %d: a heartbeat would conflict with the owner's commits", a2.Version, g.Version)
	}
	// The holder commits on the version it acquired, while renewing.
	commit(t, s, &store.Transition{RunID: "run", Version: a2.Version, Events: []*trace.Event{event("run", 1, trace.RunStarted, "")}})

	err = s.RenewLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: time.Minute, Now: now})
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
	b := acquire(t, s, "run", "B", now, time.Minute)
	// A, still holding its old version, can no longer commit.
	err = s.Commit(ctx, &store.Transition{RunID: "run", Version: a2.Version + 1, Events: []*trace.Event{event("run", 2, trace.StepStarted, "a")}})
	wantErr(t, "Commit by the previous holder", err, store.ErrConflict)
	commit(t, s, &store.Transition{RunID: "run", Version: b.Version, Events: []*trace.Event{event("run", 2, trace.StepStarted, "b")}})
}

// testLeaseExpiry: a lease taken at T for d expires at exactly T+d on the
// caller's clock: held for a caller whose Now is T+d-tick, expired for one
// whose Now is T+d, whether T is long past or far ahead of the real clock.
func testLeaseExpiry(t *testing.T, h Harness) {
	for _, at := range []struct {
		name string
		t0   time.Time
	}{{"past", past}, {"future", future}} {
		t.Run(at.name, func(t *testing.T) {
			s := open(t, h)
			ctx := t.Context()
			t0, d := at.t0, time.Minute
			create(t, s, &store.CreateRunParams{ID: "run"})
			a := acquire(t, s, "run", "A", t0, d)
			expiresAt(t, "AcquireLease", a.LeaseExpires, t0.Add(d))

			// a tick before the expiry the lease holds, against an
			// acquirer and a claimer alike.
			_, err := s.AcquireLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: d, Now: t0.Add(d - tick)})
			wantErr(t, "AcquireLease a tick before the lease expires", err, store.ErrConflict)
			if got := claim(t, s, "W", t0.Add(d-tick), d, 10); len(got) != 0 {
				t.Errorf("ClaimRuns a tick before the lease expires = %v, want none", ids(got))
			}

			// at the expiry it has lapsed.
			b := acquire(t, s, "run", "B", t0.Add(d), d)
			if b.Version != a.Version+1 {
				t.Errorf("AcquireLease after expiry: Version %d, want %d", b.Version, a.Version+1)
			}
			expiresAt(t, "AcquireLease after expiry", b.LeaseExpires, t0.Add(2*d))
			err = s.RenewLease(ctx, &store.LeaseParams{RunID: "run", Owner: "A", TTL: d, Now: t0.Add(d)})
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

			// a renewal a tick before the expiry extends from its own Now;
			// one at the expiry finds the lease lost.
			renewAt := t0.Add(3*d - tick)
			if err := s.RenewLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: d, Now: t0.Add(2*d - tick)}); err != nil {
				t.Fatalf("RenewLease a tick before the expiry: %v", err)
			}
			expiresAt(t, "RenewLease", get(t, s, "run").LeaseExpires, renewAt)
			err = s.RenewLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: d, Now: renewAt})
			wantErr(t, "RenewLease at the lease's expiry", err, store.ErrConflict)
			if g := get(t, s, "run"); g.LeaseOwner != "B" || !g.LeaseExpires.Equal(renewAt) {
				t.Errorf("a refused renewal changed the lease: owner %q until %v", g.LeaseOwner, g.LeaseExpires)
			}

			// and a claimer at the expiry takes the run up.
			got := claim(t, s, "W", renewAt, d, 10)
			if !equal(ids(got), []string{"run"}) {
				t.Fatalf("ClaimRuns at the lease's expiry = %v, want [run]", ids(got))
			}
			expiresAt(t, "claimed", got[0].LeaseExpires, renewAt.Add(d))
		})
	}
}

func claim(t *testing.T, s store.Store, owner string, now time.Time, ttl time.Duration, limit int) []*store.Run {
	t.Helper()
	runs, err := s.ClaimRuns(t.Context(), &store.ClaimParams{Owner: owner, TTL: ttl, Limit: limit, Now: now})
	if err != nil {
		t.Fatalf("ClaimRuns(%s, %d): %v", owner, limit, err)
	}
	return runs
}

func testClaimRuns(t *testing.T, h Harness) {
	s := open(t, h)
	now := past
	versions := map[string]int64{}
	for _, p := range []store.CreateRunParams{
		{ID: "c1", Status: trace.RunPending},
		{ID: "c2", Status: trace.RunRunning},
		{ID: "c3", Status: trace.RunWaiting},
		{ID: "c4", Status: trace.RunSucceeded},
		{ID: "c5", Owner: "X", LeaseTTL: time.Minute, Now: now},
		{ID: "c6", Owner: "X", LeaseTTL: time.Millisecond, Now: now},
		{ID: "c7", Status: trace.RunFailed},
		{ID: "c8", Status: trace.RunCancelled},
		{ID: "c9", Status: trace.RunRunning, Owner: "Y", LeaseTTL: time.Minute, Now: now},
	} {
		versions[p.ID] = create(t, s, &p).Version
	}
	now = now.Add(time.Millisecond) // c6's lease expires
	got := claim(t, s, "W", now, time.Minute, 10)
	if !equal(ids(got), []string{"c1", "c2", "c6"}) {
		t.Fatalf("ClaimRuns = %v, want the ready runs oldest first [c1 c2 c6]", ids(got))
	}
	for _, r := range got {
		if r.LeaseOwner != "W" || r.Version != versions[r.ID]+1 {
			t.Errorf("claimed %s: owner %q version %d (was %d)", r.ID, r.LeaseOwner, r.Version, versions[r.ID])
		}
		expiresAt(t, "claimed "+r.ID, r.LeaseExpires, now.Add(time.Minute))
		if g := get(t, s, r.ID); g.LeaseOwner != "W" || g.Version != r.Version {
			t.Errorf("GetRun(%s) after the claim: owner %q version %d", r.ID, g.LeaseOwner, g.Version)
		}
	}
	if g := get(t, s, "c5"); g.LeaseOwner != "X" {
		t.Errorf("c5 lease owner %q, want X kept", g.LeaseOwner)
	}
	if again := claim(t, s, "V", now, time.Minute, 10); len(again) != 0 {
		t.Errorf("second ClaimRuns = %v, want none", ids(again))
	}
}

func testClaimRunsLimit(t *testing.T, h Harness) {
	s := open(t, h)
	for i := range 5 {
		create(t, s, &store.CreateRunParams{ID: fmt.Sprintf("p%d", i)})
	}
	for _, want := range [][]string{{"p0", "p1"}, {"p2", "p3"}, {"p4"}, nil} {
		if got := ids(claim(t, s, "W", past, time.Minute, 2)); !equal(got, want) {
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
				got, err := s.ClaimRuns(t.Context(), &store.ClaimParams{Owner: name, TTL: time.Minute, Limit: 3, Now: past})
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
	a := acquire(t, s, "run", "A", past, time.Minute)
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
	now := past
	a := acquire(t, s, "run", "A", now, time.Hour)
	_, err := s.AcquireLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: time.Minute, TakeFrom: "C", Now: now})
	wantErr(t, "AcquireLease taking from an owner that does not hold it", err, store.ErrConflict)
	b, err := s.AcquireLease(ctx, &store.LeaseParams{RunID: "run", Owner: "B", TTL: time.Minute, TakeFrom: "A", Now: now})
	if err != nil {
		t.Fatalf("AcquireLease taking from the holder: %v", err)
	}
	if b.LeaseOwner != "B" || b.Version != a.Version+1 {
		t.Errorf("taken lease: owner %q version %d, want B at %d", b.LeaseOwner, b.Version, a.Version+1)
	}
	expiresAt(t, "taken lease", b.LeaseExpires, now.Add(time.Minute))
	err = s.RenewLease(ctx, &store.LeaseParams{RunID: "run", Owner: "A", TTL: time.Minute, Now: now})
	wantErr(t, "RenewLease by the owner it was taken from", err, store.ErrConflict)
	err = s.Commit(ctx, &store.Transition{RunID: "run", Version: a.Version, Events: []*trace.Event{event("run", 1, trace.RunStarted, "")}})
	wantErr(t, "Commit by the owner it was taken from", err, store.ErrConflict)
}
