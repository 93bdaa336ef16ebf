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
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/engine/clocktest"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// renewFailStore fails RenewLease with what fail returns for the nth
// renewal (nil passes it on), as a database that went away, or a lease
// another process took, would. renewedOK gets, when it has room, each
// renewal that went through: its Now and the expiry it stored.
type renewFailStore struct {
	store.Store
	fail      func(n int) error
	renewed   atomic.Int32
	failed    atomic.Int32
	renewedOK chan [2]time.Time
}

func (s *renewFailStore) RenewLease(ctx context.Context, p *store.LeaseParams) error {
	if err := s.fail(int(s.renewed.Add(1))); err != nil {
		s.failed.Add(1)
		return err
	}
	err := s.Store.RenewLease(ctx, p)
	if err == nil && s.renewedOK != nil {
		run, gerr := s.GetRun(ctx, p.RunID)
		if gerr != nil {
			return gerr
		}
		select {
		case s.renewedOK <- [2]time.Time{p.Now, run.LeaseExpires}:
		default:
		}
	}
	return err
}

// leaseTTL is the lease of the tests below, on a virtual clock: the
// heartbeat renews every 10 s, retries every 2.5 s and gives up with 10 s
// left, and no test waits for any of it.
const leaseTTL = 30 * time.Second

// leaseStart is where the virtual clock of a lease test starts: years
// away from the real clock, so a lease judged by the wall clock anywhere
// would fail the test.
var leaseStart = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

// driveClock advances clk by step whenever the code under test waits on
// it (n sleeps and timers), until ctx is done. More than max steps fail t,
// and so does a minute of real time without the code waiting on the clock
// (a wait on the wall clock, which never happens when the test passes).
func driveClock(t *testing.T, ctx context.Context, clk *clocktest.Fake, n int, step time.Duration, max int) {
	t.Helper()
	for i := 0; ; i++ {
		wait, cancel := context.WithTimeout(ctx, time.Minute)
		err := clk.BlockUntil(wait, n)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			t.Fatalf("at virtual time %v the run has not waited on the clock for a minute of real time", clk.Now())
		case i == max:
			t.Fatalf("after %d steps of %v (virtual time %v), the run still waits on the clock", max, step, clk.Now())
		}
		clk.Advance(step)
	}
}

// runInBackground runs e.Run and returns a channel that gets its outcome,
// and a context that is done once it returned.
func runInBackground(e *engine.Engine, f *flow.Flow, input any, opts *engine.RunOptions) (<-chan runOutcome, context.Context) {
	out := make(chan runOutcome, 1)
	ctx, done := context.WithCancel(context.Background())
	go func() {
		res, err := e.Run(context.Background(), f, input, opts)
		out <- runOutcome{res, err}
		done()
	}()
	return out, ctx
}

type runOutcome struct {
	res *engine.Result
	err error
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
// its last committed transition. On a virtual clock: the run stops at the
// exact moment its heartbeat gives up.
func TestLeaseThatCannotBeRenewedStopsTheRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, want string
		err        error
		// left is how much of the lease is left when the run stops: a
		// lost lease stops it at the first renewal, an unreachable store
		// once only a third of the TTL is left.
		left time.Duration
	}{
		{"store unreachable", "could not be renewed", errors.New("dial tcp 10.0.0.5:5432: connect: connection refused"), leaseTTL / 3},
		{"lease lost", "lost to another process", fmt.Errorf("lease lost: %w", store.ErrConflict), 2 * leaseTTL / 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := openSQLite(t)
			clk := clocktest.New(leaseStart)
			var down atomic.Bool
			flaky := &renewFailStore{Store: st, fail: func(int) error {
				if down.Load() {
					return c.err
				}
				return nil
			}}
			started, stopped := make(chan struct{}), make(chan struct{})
			var stoppedAt, leaseUntil time.Time
			slow := &slowTool{call: func(ctx context.Context, n int) error {
				if n > 1 {
					return nil // the resume
				}
				down.Store(true)
				close(started)
				<-ctx.Done() // only the run's stopping ends step one
				stoppedAt = clk.Now()
				if run, err := st.GetRun(context.Background(), "r"); err == nil {
					leaseUntil = run.LeaseExpires
				}
				close(stopped)
				return context.Cause(ctx)
			}}
			b := newKeyCounter("b", true)
			fx := newFixture(t, slow.tool(), b)
			f := fx.parse(leaseFlow)
			e := engine.New(engine.Config{Tools: fx.tools, Clock: clk, Store: flaky, Owner: "p1", LeaseTTL: leaseTTL})
			out, _ := runInBackground(e, f, nil, &engine.RunOptions{RunID: "r"})
			<-started
			driveCtx, cancel := context.WithCancel(ctx)
			go func() { <-stopped; cancel() }()
			driveClock(t, driveCtx, clk, 1, leaseTTL/12, 100)
			o := <-out
			if o.err != nil {
				t.Fatal(o.err)
			}
			wantStatus(t, o.res, trace.RunFailed)
			wantErrorClass(t, o.res, fault.Conflict, c.want)
			if want := leaseStart.Add(leaseTTL); !leaseUntil.Equal(want) {
				t.Errorf("the lease ran until %v, want %v: the run was created at the clock's start, leased for the TTL", leaseUntil, want)
			}
			if left := leaseUntil.Sub(stoppedAt); left != c.left {
				t.Errorf("the run stopped with %v of its lease left, want %v: it must stop while the lease still holds, when its heartbeat gives up", left, c.left)
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

			p2 := engine.New(engine.Config{Tools: fx.tools, Clock: clk, Store: st, Owner: "p2", LeaseTTL: leaseTTL})
			res, err := p2.Resume(ctx, f, "r")
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
// (the database restarts) are retried, and the run goes on. On a virtual
// clock: the first renewal (at a third of the TTL) and its first retry fail,
// the second retry renews the lease from its own time.
func TestLeaseHeartbeatRidesOutABriefOutage(t *testing.T) {
	t.Parallel()
	st := openSQLite(t)
	clk := clocktest.New(leaseStart)
	flaky := &renewFailStore{Store: st, renewedOK: make(chan [2]time.Time, 1), fail: func(n int) error {
		if n <= 2 {
			return errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")
		}
		return nil
	}}
	started := make(chan struct{})
	var renewedAt, leaseUntil time.Time
	// The long step lasts until a renewal went through after the outage
	// (or the run is stopped, which fails the test below).
	slow := &slowTool{call: func(ctx context.Context, _ int) error {
		close(started)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case r := <-flaky.renewedOK:
			renewedAt, leaseUntil = r[0], r[1]
		}
		return nil
	}}
	b := newKeyCounter("b", true)
	fx := newFixture(t, slow.tool(), b)
	e := engine.New(engine.Config{Tools: fx.tools, Clock: clk, Store: flaky, Owner: "p1", LeaseTTL: leaseTTL})
	out, done := runInBackground(e, fx.parse(leaseFlow), nil, &engine.RunOptions{RunID: "r"})
	<-started
	driveClock(t, done, clk, 1, leaseTTL/12, 100)
	o := <-out
	if o.err != nil {
		t.Fatal(o.err)
	}
	wantStatus(t, o.res, trace.RunSucceeded)
	if n := flaky.failed.Load(); n != 2 {
		t.Fatalf("%d renewals failed, want 2", n)
	}
	if want := leaseStart.Add(leaseTTL/3 + 2*leaseTTL/12); !renewedAt.Equal(want) {
		t.Errorf("renewed at %v, want %v: a third of the TTL in, and two retries a twelfth apart", renewedAt, want)
	}
	if want := renewedAt.Add(leaseTTL); !leaseUntil.Equal(want) {
		t.Errorf("renewed until %v, want %v: the TTL from the renewal's own time", leaseUntil, want)
	}
	if got := b.calls(); len(got) != 1 {
		t.Fatalf("calls of step two %v", got)
	}
}

// A pure first step's start is not committed, so while it runs the run is
// not in the store yet: the heartbeat has nothing to renew, and must not
// take that for a lost lease. The step outlasts the whole TTL here (twice
// over, on a virtual clock), and the run is created, and leased, at the
// time of the commit that follows it.
func TestLongPureFirstStepKeepsItsLease(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(leaseStart)
	pure := tool.Func(tool.Spec{Name: "slow", Effect: tool.EffectNone, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
		if err := clk.Sleep(ctx, 2*leaseTTL); err != nil {
			return nil, err
		}
		return map[string]any{"ok": true}, nil
	})
	b := newKeyCounter("b", true)
	fx := newFixture(t, pure, b)
	st := openSQLite(t)
	e := engine.New(engine.Config{Tools: fx.tools, Clock: clk, Store: st, Owner: "p1", LeaseTTL: leaseTTL})
	out, done := runInBackground(e, fx.parse(leaseFlow), map[string]any{}, nil)
	// the step's sleep and the heartbeat both wait on the clock.
	driveClock(t, done, clk, 2, leaseTTL/3, 100)
	o := <-out
	if o.err != nil || o.res.Status != trace.RunSucceeded {
		t.Fatalf("run: %v, %+v", o.err, o.res)
	}
	run, err := st.GetRun(context.Background(), o.res.RunID)
	if err != nil || run.Status != trace.RunSucceeded {
		t.Fatalf("stored run: %+v, %v", run, err)
	}
	if want := leaseStart.Add(2 * leaseTTL); !run.CreatedAt.Equal(want) {
		t.Errorf("run created at %v, want %v: by the commit after the pure step, at the engine's time", run.CreatedAt, want)
	}
}
