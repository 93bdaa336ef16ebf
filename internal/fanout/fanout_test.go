package fanout_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/internal/engine/sched/fan"
	"github.com/reinhq/rein/internal/fanout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRunBoundsAndSettlesOnCallersGoroutine runs 20 units at most 3 at
// once: the bound holds, every unit settles once, and settle sees them
// one at a time (no lock in the test's state).
func TestRunBoundsAndSettlesOnCallersGoroutine(t *testing.T) {
	t.Parallel()
	var f fan.Fan
	f.Reset(20, 3)
	var running, peak atomic.Int32
	var settled []int
	err := fanout.Run(context.Background(), &f, func(_ context.Context, u fan.Unit) int {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		running.Add(-1)
		return u.Index * 10
	}, func(u fan.Unit, r int) error {
		if r != u.Index*10 {
			t.Errorf("unit %d settled with %d", u.Index, r)
		}
		settled = append(settled, u.Index)
		f.Settle(u.Index)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 3 {
		t.Errorf("peak in flight %d, more than the limit of 3", p)
	}
	slices.Sort(settled)
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}; !slices.Equal(settled, want) {
		t.Errorf("settled %v, want each unit once", settled)
	}
	if !f.Done() {
		t.Error("the fan is not done")
	}
}

// TestRunSequentialIsInline: with a limit of 1 every unit runs on the
// caller's goroutine, in index order.
func TestRunSequentialIsInline(t *testing.T) {
	t.Parallel()
	var f fan.Fan
	f.Reset(4, 1)
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "caller")
	var order []int
	err := fanout.Run(ctx, &f, func(c context.Context, u fan.Unit) int {
		if c != ctx {
			t.Errorf("unit %d got another context than the caller's: not run in place", u.Index)
		}
		order = append(order, u.Index) // no lock: the caller's goroutine
		return 0
	}, func(u fan.Unit, _ int) error { f.Settle(u.Index); return nil })
	if err != nil || !slices.Equal(order, []int{0, 1, 2, 3}) {
		t.Errorf("order %v, err %v; want 0..3 in order", order, err)
	}
}

// TestRunSettleErrorCancelsInFlight: settle's first error cancels the
// units in flight (their context's cause is it), nothing more starts,
// every started unit still settles, and Run returns that error.
func TestRunSettleErrorCancelsInFlight(t *testing.T) {
	t.Parallel()
	var f fan.Fan
	f.Reset(10, 3)
	boom := errors.New("boom")
	var started atomic.Int32
	settles := 0
	err := fanout.Run(context.Background(), &f, func(ctx context.Context, u fan.Unit) error {
		started.Add(1)
		if u.Index == 0 {
			return boom
		}
		<-ctx.Done()
		return context.Cause(ctx)
	}, func(u fan.Unit, r error) error {
		settles++
		if u.Index != 0 && !errors.Is(r, boom) {
			t.Errorf("unit %d ended with %v, want the settle error as its cause", u.Index, r)
		}
		return r
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Run returned %v, want boom", err)
	}
	if n := started.Load(); n != 3 || settles != 3 {
		t.Errorf("%d started, %d settled; want the first 3 only, each settled", n, settles)
	}
}

// TestRunStopsHandingOutWhenCtxEnds: once the caller's context ends no
// unit starts; Run returns nil (ctx is the caller's to look at).
func TestRunStopsHandingOutWhenCtxEnds(t *testing.T) {
	t.Parallel()
	var f fan.Fan
	f.Reset(10, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := 0
	err := fanout.Run(ctx, &f, func(context.Context, fan.Unit) int {
		ran++
		if ran == 2 {
			cancel()
		}
		return 0
	}, func(u fan.Unit, _ int) error { f.Settle(u.Index); return nil })
	if err != nil || ran != 2 {
		t.Errorf("ran %d units, err %v; want 2 and nil", ran, err)
	}
}

// TestRunDAG runs a diamond: the order of starts follows the machine.
func TestRunDAG(t *testing.T) {
	t.Parallel()
	var d fan.DAG
	// 0 ← 1, 0 ← 2, {1,2} ← 3
	d.Reset([][]int{nil, {0}, {0}, {1, 2}}, 2, 0, 10)
	var starts []int
	err := fanout.Run(context.Background(), &d, func(_ context.Context, i int) int { return i },
		func(i int, _ int) error {
			starts = append(starts, i)
			d.Settle(i, fan.Succeeded, true)
			return nil
		})
	if err != nil || !d.Done() || len(starts) != 4 || starts[0] != 0 || starts[3] != 3 {
		t.Errorf("settled %v, done %v, err %v; want 0 first, 3 last, all done", starts, d.Done(), err)
	}
}
