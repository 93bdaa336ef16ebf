package trace_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
)

// gated is a sink that keeps the events it gets; while gate is open
// (non-nil and not closed) each Emit waits for it.
type gated struct {
	gate    chan struct{}
	entered chan struct{} // closed at the first Emit
	once    sync.Once
	mu      sync.Mutex
	seqs    []int64
	ctxErr  error
	value   any
}

func newGated() *gated { return &gated{gate: make(chan struct{}), entered: make(chan struct{})} }

type key struct{}

func (g *gated) Emit(ctx context.Context, e *trace.Event) {
	g.once.Do(func() { close(g.entered) })
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seqs = append(g.seqs, e.Seq)
	g.ctxErr, g.value = ctx.Err(), ctx.Value(key{})
}

func (g *gated) got() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int64(nil), g.seqs...)
}

func emit(a *trace.Async, ctx context.Context, from, to int64) {
	for s := from; s <= to; s++ {
		a.Emit(ctx, &trace.Event{Seq: s, Kind: trace.StepStarted})
	}
}

func increasing(t *testing.T, seqs []int64) {
	t.Helper()
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("events out of order: %v", seqs)
		}
	}
}

// WaitForRoom loses nothing: every event reaches the wrapped sink, in
// order, by Close; the wrapped sink gets the values of Emit's context but
// not its cancellation.
func TestAsyncWaitForRoomDeliversEverythingInOrder(t *testing.T) {
	t.Parallel()
	g := newGated()
	close(g.gate)
	a := trace.NewAsync(g, &trace.AsyncOptions{Buffer: 4, OnFull: trace.WaitForRoom})
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "run"))
	cancel()
	emit(a, ctx, 1, 1000)
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	seqs := g.got()
	if len(seqs) != 1000 || a.Dropped() != 0 {
		t.Fatalf("%d events delivered, %d dropped; want 1000, 0", len(seqs), a.Dropped())
	}
	increasing(t, seqs)
	if g.ctxErr != nil || g.value != "run" {
		t.Errorf("the wrapped sink's context: err %v, value %v; want no error, the Emit context's value", g.ctxErr, g.value)
	}
}

// Under DropNewest (the default) Emit never waits: with the wrapped sink
// stuck, the events that find the queue full are dropped and counted, and
// the ones delivered are the oldest, in order.
func TestAsyncDropNewestNeverWaits(t *testing.T) {
	t.Parallel()
	g := newGated()
	a := trace.NewAsync(g, &trace.AsyncOptions{Buffer: 4})
	emit(a, context.Background(), 1, 1)
	<-g.entered // the drainer holds event 1 in the stuck sink
	emit(a, context.Background(), 2, 100)
	if d := a.Dropped(); d != 95 {
		t.Errorf("Dropped() = %d with the sink stuck on one event and 4 queued, want 95", d)
	}
	close(g.gate)
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if seqs := g.got(); len(seqs) != 5 || seqs[0] != 1 || seqs[4] != 5 {
		t.Errorf("delivered %v, want 1..5", seqs)
	}
}

// Under DropOldest the newest events are the ones kept.
func TestAsyncDropOldestKeepsTheNewest(t *testing.T) {
	t.Parallel()
	g := newGated()
	a := trace.NewAsync(g, &trace.AsyncOptions{Buffer: 4, OnFull: trace.DropOldest})
	emit(a, context.Background(), 1, 1)
	<-g.entered
	emit(a, context.Background(), 2, 100)
	close(g.gate)
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	seqs := g.got()
	if want := []int64{1, 97, 98, 99, 100}; len(seqs) != len(want) || seqs[0] != 1 || seqs[1] != 97 || seqs[4] != 100 {
		t.Errorf("delivered %v, want %v", seqs, want)
	}
	if d := a.Dropped(); d != 95 {
		t.Errorf("Dropped() = %d, want 95", d)
	}
}

// Flush waits for the events queued before it, or for its context.
func TestAsyncFlush(t *testing.T) {
	t.Parallel()
	g := newGated()
	a := trace.NewAsync(g, nil)
	defer func() { _ = a.Close(context.Background()) }()
	emit(a, context.Background(), 1, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := a.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush with the sink stuck = %v, want the deadline", err)
	}
	close(g.gate)
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if seqs := g.got(); len(seqs) != 10 {
		t.Errorf("after Flush %d events delivered, want 10", len(seqs))
	}
}

// Close gives up on a stuck sink at its deadline: the queued events are
// dropped, an Emit waiting for room returns (its event dropped), later
// events are dropped, and the goroutine ends once the sink returns
// (TestMain checks for leaks).
func TestAsyncCloseGivesUpOnAStuckSink(t *testing.T) {
	t.Parallel()
	g := newGated()
	a := trace.NewAsync(g, &trace.AsyncOptions{Buffer: 2, OnFull: trace.WaitForRoom})
	emit(a, context.Background(), 1, 1)
	<-g.entered
	emit(a, context.Background(), 2, 3) // the queue is full now
	waiting := make(chan struct{})
	go func() {
		defer close(waiting)
		emit(a, context.Background(), 4, 4)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := a.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close with the sink stuck = %v, want the deadline", err)
	}
	<-waiting
	emit(a, context.Background(), 5, 5)
	close(g.gate)
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if seqs := g.got(); len(seqs) != 1 || a.Dropped() != 4 {
		t.Errorf("delivered %v, dropped %d; want [1], 4", seqs, a.Dropped())
	}
}

func TestNewAsyncRejectsAnUnknownPolicy(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("NewAsync accepted OnFull 7")
		}
	}()
	trace.NewAsync(trace.Discard, &trace.AsyncOptions{OnFull: 7})
}

type keeping struct{}

func (keeping) Emit(context.Context, *trace.Event) {}

// Multi is a Borrower only when every one of its sinks is; Async keeps
// events (it queues them), so it is not one.
func TestMultiBorrowsWhenEverySinkDoes(t *testing.T) {
	t.Parallel()
	async := trace.NewAsync(trace.Discard, nil)
	defer func() { _ = async.Close(context.Background()) }()
	for _, tc := range []struct {
		name string
		sink trace.Sink
		want bool
	}{
		{"Discard", trace.Discard, true},
		{"a keeping sink", keeping{}, false},
		{"Async", async, false},
		{"Multi of borrowers", trace.Multi(trace.Discard, trace.Discard), true},
		{"Multi with a keeping sink", trace.Multi(trace.Discard, keeping{}), false},
		{"Multi of one", trace.Multi(nil, keeping{}), false},
	} {
		if got := trace.Borrows(tc.sink); got != tc.want {
			t.Errorf("Borrows(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
