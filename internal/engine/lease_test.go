package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// renewFailStore fails RenewLease with what fail returns for the nth
// renewal (nil passes it on), as a database that went away, or a lease
// another process took, would.
type renewFailStore struct {
	store.Store
	fail    func(n int) error
	renewed atomic.Int32
	failed  atomic.Int32
}

func (s *renewFailStore) RenewLease(ctx context.Context, p *store.LeaseParams) error {
	if err := s.fail(int(s.renewed.Add(1))); err != nil {
		s.failed.Add(1)
		return err
	}
	return s.Store.RenewLease(ctx, p)
}

// leaseFlow's first step is a long call, the kind during which only the
// heartbeat talks to the store.
const leaseFlow = "name: l\nsteps:\n  - {id: one, tool: slow, args: {}}\n  - {id: two, tool: b, args: {}}\n"

// slowTool runs calls through call, recording their idempotency keys.
type slowTool struct {
	mu   sync.Mutex
	keys []string
	call func(ctx context.Context, n int) error
}

func (s *slowTool) tool() tool.Tool {
	return tool.Func(tool.Spec{Name: "slow", Effect: tool.EffectWrite, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
		s.mu.Lock()
		s.keys = append(s.keys, tool.CallInfoFrom(ctx).IdempotencyKey)
		n := len(s.keys)
		s.mu.Unlock()
		if err := s.call(ctx, n); err != nil {
			return nil, err
		}
		return map[string]any{"n": float64(n)}, nil
	})
}

func (s *slowTool) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// TestLeaseThatCannotBeRenewedStopsTheRun: when the heartbeat cannot renew
// the lease, because the store is unreachable or because the lease was lost,
// the run stops before the lease expires (so no other process can take the
// run up while this one still acts), commits nothing more (the run stays
// running in the store, not failed), and another process resumes it from
// its last committed transition.
func TestLeaseThatCannotBeRenewedStopsTheRun(t *testing.T) {
	t.Parallel()
	// The lease times are wall-clock and generous: the heartbeat renews
	// every second and gives up a second before the lease expires, so a
	// loaded machine (timers firing late, a slow store) keeps the margins
	// this test checks.
	const ttl = 3 * time.Second
	for _, c := range []struct {
		name, want string
		err        error
	}{
		{"store unreachable", "could not be renewed", errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")},
		{"lease lost", "lost to another process", fmt.Errorf("lease lost: %w", store.ErrConflict)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := openSQLite(t)
			var down atomic.Bool
			flaky := &renewFailStore{Store: st, fail: func(int) error {
				if down.Load() {
					return c.err
				}
				return nil
			}}
			var stopped atomic.Bool
			var leaseLeft atomic.Int64
			slow := &slowTool{call: func(ctx context.Context, n int) error {
				if n > 1 {
					return nil // the resume
				}
				down.Store(true)
				select {
				case <-ctx.Done():
					stopped.Store(true)
					if run, err := st.GetRun(context.Background(), "r"); err == nil {
						leaseLeft.Store(int64(time.Until(run.LeaseExpires)))
					}
					return context.Cause(ctx)
				case <-time.After(4 * ttl):
					return nil
				}
			}}
			b := newKeyCounter("b", true)
			fx := newFixture(t, slow.tool(), b)
			f := fx.parse(leaseFlow)
			e := engine.New(engine.Config{Tools: fx.tools, Clock: fx.clock, Store: flaky, Owner: "p1", LeaseTTL: ttl})
			res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunFailed)
			wantErrorClass(t, res, fault.Conflict, c.want)
			if !stopped.Load() {
				t.Fatal("step one ran to its end: the run must stop when its lease cannot be renewed")
			}
			if left := time.Duration(leaseLeft.Load()); left <= 0 {
				t.Errorf("the run stopped %s after its lease expired: it must stop while the lease still holds", -left)
			}
			if n := flaky.failed.Load(); n == 0 {
				t.Error("no renewal failed")
			}
			if got := b.calls(); len(got) != 0 {
				t.Fatalf("step two ran after the lease was gone: %v", got)
			}
			run, err := st.GetRun(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != trace.RunRunning {
				t.Fatalf("run %s in the store: a run that lost its lease commits nothing, so it stays running for a resume", run.Status)
			}
			evs, err := st.Events(ctx, "r", 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if last := evs[len(evs)-1]; last.Kind != trace.StepStarted || last.StepID != "one" {
				t.Fatalf("last committed event %s %s: nothing after step one's start may be committed", last.Kind, last.StepID)
			}

			res, err = durableEngine(fx, st, "p2").Resume(ctx, f, "r")
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunSucceeded)
			if got := strings.Join(slow.calls(), ","); got != "r/one/1,r/one/1" {
				t.Fatalf("calls of step one %s: the resume runs the interrupted attempt again, with its key", got)
			}
			if got := b.calls(); len(got) != 1 {
				t.Fatalf("calls of step two %v", got)
			}
		})
	}
}

// TestLeaseHeartbeatRidesOutABriefOutage: renewals that fail for a moment
// (the database restarts) are retried, and the run goes on.
func TestLeaseHeartbeatRidesOutABriefOutage(t *testing.T) {
	t.Parallel()
	// Renewals come every second; the two failures and their retries
	// (250 ms apart) fit in the second the heartbeat has before it gives
	// up, with room for a loaded machine.
	const ttl = 3 * time.Second
	st := openSQLite(t)
	flaky := &renewFailStore{Store: st, fail: func(n int) error {
		if n <= 2 {
			return errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")
		}
		return nil
	}}
	// The long step lasts until a renewal went through after the outage
	// (or the run is stopped, which fails the test below).
	slow := &slowTool{call: func(ctx context.Context, _ int) error {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for flaky.renewed.Load()-flaky.failed.Load() < 1 {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-tick.C:
			}
		}
		return nil
	}}
	b := newKeyCounter("b", true)
	fx := newFixture(t, slow.tool(), b)
	e := engine.New(engine.Config{Tools: fx.tools, Clock: fx.clock, Store: flaky, Owner: "p1", LeaseTTL: ttl})
	res, err := e.Run(context.Background(), fx.parse(leaseFlow), nil, &engine.RunOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if n := flaky.failed.Load(); n != 2 {
		t.Fatalf("%d renewals failed, want 2", n)
	}
	if got := b.calls(); len(got) != 1 {
		t.Fatalf("calls of step two %v", got)
	}
}

// A pure first step's start is not committed, so while it runs the run is
// not in the store yet: the heartbeat has nothing to renew, and must not
// take that for a lost lease. The step outlasts the whole TTL here.
func TestLongPureFirstStepKeepsItsLease(t *testing.T) {
	t.Parallel()
	const ttl = time.Second // margins a loaded machine keeps (see the lease tests above)
	pure := tool.Func(tool.Spec{Name: "slow", Effect: tool.EffectNone, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
		select {
		case <-time.After(2 * ttl):
			return map[string]any{"ok": true}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	b := newKeyCounter("b", true)
	fx := newFixture(t, pure, b)
	st := openSQLite(t)
	e := engine.New(engine.Config{Tools: fx.tools, Store: st, Owner: "p1", LeaseTTL: ttl})
	res, err := e.Run(context.Background(), fx.parse(leaseFlow), map[string]any{}, nil)
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("run: %v, %+v", err, res)
	}
	run, err := st.GetRun(context.Background(), res.RunID)
	if err != nil || run.Status != trace.RunSucceeded {
		t.Fatalf("stored run: %+v, %v", run, err)
	}
}
