package trace

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// DefaultAsyncBuffer is the queue length of an Async sink when
// AsyncOptions.Buffer is not set (OpenTelemetry's batch span processor
// queues as many spans).
const DefaultAsyncBuffer = 2048

// FullPolicy says what an Async sink does with an event that finds its
// queue full.
type FullPolicy int

// Policies for a full queue.
const (
	// DropNewest drops the event that finds the queue full, and counts it
	// (Async.Dropped). The run never waits for the sink. The default, as in
	// OpenTelemetry's batch span processor.
	DropNewest FullPolicy = iota
	// DropOldest drops the oldest queued event to make room, and counts
	// it: the newest events are the ones kept. The run never waits.
	DropOldest
	// WaitForRoom makes Emit wait until the queue has room: nothing is
	// lost, but a sink slower than the runs slows them down, and one that
	// never returns stalls them (until Close gives up on it). Emit's
	// context does not end the wait, so a cancelled run's last events are
	// kept too.
	WaitForRoom
)

// AsyncOptions configure NewAsync. A nil *AsyncOptions means defaults.
type AsyncOptions struct {
	// Buffer is how many events the queue holds, besides the batch being
	// delivered. Zero or less means DefaultAsyncBuffer.
	Buffer int
	// OnFull is the policy when the queue is full. Defaults to DropNewest.
	OnFull FullPolicy
}

// Async is a Sink that never lets the sink it wraps stall a run: Emit puts
// the event in a bounded queue and returns, and a goroutine of its own
// hands the queued events to the wrapped sink, in the order they came. When
// the queue is full, OnFull decides (DropNewest by default), and Dropped
// counts the events that were lost.
//
// The wrapped sink is called from that one goroutine, never concurrently
// with itself, with a context that carries the values of the Emit call's
// context but not its cancellation (a run's context ends when the run does,
// and its last events are delivered after that).
//
// Async is safe for concurrent use. Call Close when done: it drains the
// queue and stops the goroutine. It does not close the wrapped sink, which
// stays the caller's.
type Async struct {
	next   Sink
	policy FullPolicy

	mu   sync.Mutex
	ring []asyncItem
	head int // index of the oldest queued event
	n    int // events queued
	// accepted counts events ever queued; finished those that left the
	// queue and were delivered or dropped (Flush waits for one to reach
	// the other).
	accepted, finished uint64
	closed             bool
	// waiting counts goroutines waiting on progress (Flush, WaitForRoom),
	// which is closed and replaced when the drainer makes progress.
	waiting  int
	progress chan struct{}

	wake     chan struct{} // capacity 1: there is work for the drainer
	stop     chan struct{} // closed when Close gives up: drop what is left
	stopOnce sync.Once
	done     chan struct{} // closed when the drainer has returned
	dropped  atomic.Uint64
}

type asyncItem struct {
	ctx context.Context
	e   *Event
}

// batchLen bounds the events the drainer takes from the queue at once.
const batchLen = 64

var _ Sink = (*Async)(nil)

// NewAsync returns an Async sink delivering to next, and starts its
// goroutine. It panics if opts.OnFull is not one of the policies above.
func NewAsync(next Sink, opts *AsyncOptions) *Async {
	var o AsyncOptions
	if opts != nil {
		o = *opts
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultAsyncBuffer
	}
	switch o.OnFull {
	case DropNewest, DropOldest, WaitForRoom:
	default:
		panic(fmt.Sprintf("trace: NewAsync: OnFull is %d, not DropNewest, DropOldest or WaitForRoom", o.OnFull))
	}
	if next == nil {
		next = Discard
	}
	a := &Async{next: next, policy: o.OnFull, ring: make([]asyncItem, o.Buffer),
		progress: make(chan struct{}), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go a.drain()
	return a
}

// Emit queues e for the wrapped sink and returns without waiting for it,
// except under WaitForRoom when the queue is full. An event that finds the
// queue full under DropNewest, or the sink closed, is dropped and counted.
func (a *Async) Emit(ctx context.Context, e *Event) {
	a.mu.Lock()
	for !a.closed && a.n == len(a.ring) {
		switch a.policy {
		case DropOldest:
			a.ring[a.head] = asyncItem{}
			a.head = (a.head + 1) % len(a.ring)
			a.n--
			a.finished++
			a.dropped.Add(1)
		case WaitForRoom:
			ch := a.waitLocked()
			a.mu.Unlock()
			<-ch
			a.mu.Lock()
		default:
			a.mu.Unlock()
			a.dropped.Add(1)
			return
		}
	}
	if a.closed {
		a.mu.Unlock()
		a.dropped.Add(1)
		return
	}
	a.ring[(a.head+a.n)%len(a.ring)] = asyncItem{ctx: ctx, e: e}
	a.n++
	a.accepted++
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Dropped returns how many events were dropped: by the full-queue policy,
// after Close, or still queued when Close gave up.
func (a *Async) Dropped() uint64 { return a.dropped.Load() }

// Flush waits until every event queued before the call has been handed to
// the wrapped sink (or dropped), and returns nil; or until ctx ends, and
// returns its error. It does not flush the wrapped sink's own buffers.
func (a *Async) Flush(ctx context.Context) error {
	a.mu.Lock()
	target := a.accepted
	for a.finished < target {
		ch := a.waitLocked()
		a.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("trace: flush async sink: %d events not delivered yet: %w", a.pending(target), context.Cause(ctx))
		}
		a.mu.Lock()
	}
	a.mu.Unlock()
	return nil
}

// Close stops accepting events (later ones are dropped and counted), waits
// until the queued ones have been handed to the wrapped sink and the
// goroutine has returned, and returns nil. If ctx ends first, Close returns
// its error and gives up: the events still queued are dropped, and the
// goroutine returns as soon as the wrapped sink's call in progress does.
// Calling Close again waits again.
func (a *Async) Close(ctx context.Context) error {
	a.mu.Lock()
	a.closed = true
	a.signalLocked() // WaitForRoom emitters drop their event
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		n := a.pending(a.acceptedNow())
		a.stopOnce.Do(func() { close(a.stop) })
		return fmt.Errorf("trace: close async sink: %d events not delivered (dropped): %w", n, context.Cause(ctx))
	}
}

// drain is the goroutine that hands queued events to the wrapped sink.
func (a *Async) drain() {
	defer close(a.done)
	batch := make([]asyncItem, 0, min(len(a.ring), batchLen))
	for {
		a.mu.Lock()
		for a.n == 0 && !a.closed {
			a.mu.Unlock()
			select {
			case <-a.wake:
			case <-a.stop:
			}
			a.mu.Lock()
		}
		if a.stopped() {
			a.dropQueueLocked()
		}
		if a.n == 0 { // closed, and nothing left
			a.mu.Unlock()
			return
		}
		for range min(a.n, cap(batch)) {
			batch = append(batch, a.ring[a.head])
			a.ring[a.head] = asyncItem{}
			a.head = (a.head + 1) % len(a.ring)
			a.n--
		}
		a.signalLocked() // there is room now
		a.mu.Unlock()
		for i, it := range batch {
			if a.stopped() {
				a.dropped.Add(uint64(len(batch) - i))
				break
			}
			a.next.Emit(context.WithoutCancel(it.ctx), it.e)
		}
		clear(batch)
		a.mu.Lock()
		a.finished += uint64(len(batch))
		a.signalLocked()
		a.mu.Unlock()
		batch = batch[:0]
	}
}

func (a *Async) stopped() bool {
	select {
	case <-a.stop:
		return true
	default:
		return false
	}
}

// dropQueueLocked drops every queued event. a.mu must be held.
func (a *Async) dropQueueLocked() {
	for a.n > 0 {
		a.ring[a.head] = asyncItem{}
		a.head = (a.head + 1) % len(a.ring)
		a.n--
		a.finished++
		a.dropped.Add(1)
	}
	a.signalLocked()
}

// waitLocked returns a channel closed at the drainer's next progress (or
// Close). a.mu must be held.
func (a *Async) waitLocked() <-chan struct{} {
	a.waiting++
	return a.progress
}

// signalLocked wakes the goroutines waiting for progress. a.mu must be held.
func (a *Async) signalLocked() {
	if a.waiting > 0 {
		close(a.progress)
		a.progress = make(chan struct{})
		a.waiting = 0
	}
}

func (a *Async) acceptedNow() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.accepted
}

// pending is how many of the first target accepted events have not
// finished.
func (a *Async) pending(target uint64) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.finished >= target {
		return 0
	}
	return target - a.finished
}
