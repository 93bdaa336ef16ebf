// Package clocktest provides clocks for tests. Fake is a virtual
// engine.Clock: its time moves only when the test advances it, and its
// sleeps, timers and deadlines fire when the time they wait for is
// reached, so a test of a lease takes no real time and the moment
// something happens is exact. Skewed is the wall clock read ahead or
// behind, as another host's clock may be.
package clocktest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/reinhq/rein/internal/engine"
)

// Fake is a virtual clock. Its zero value is not usable; call New. It is
// safe for concurrent use.
type Fake struct {
	mu  sync.Mutex
	now time.Time
	// waits are the pending sleeps, timers and deadlines, in the order
	// they were registered.
	waits []*wait
	// changed is closed (and replaced) whenever waits change, for
	// BlockUntil.
	changed chan struct{}
}

// wait is one pending sleep (wake), timer (fn) or deadline (cancel).
type wait struct {
	at     time.Time
	wake   chan struct{}
	fn     func()
	cancel context.CancelCauseFunc
}

var _ engine.Clock = (*Fake)(nil)

// New returns a Fake reading start.
func New(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the virtual time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep waits until the clock has been advanced by d, or until ctx is
// done (returning context.Cause(ctx)). d ≤ 0 returns at once.
func (c *Fake) Sleep(ctx context.Context, d time.Duration) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	c.mu.Lock()
	w := &wait{at: c.now.Add(d), wake: make(chan struct{})}
	c.addLocked(w)
	c.mu.Unlock()
	select {
	case <-w.wake:
		return nil
	case <-ctx.Done():
		c.remove(w)
		return context.Cause(ctx)
	}
}

// AfterFunc calls f in its own goroutine once the clock has been advanced
// by d (at once, for d ≤ 0), unless the Timer is stopped first.
func (c *Fake) AfterFunc(d time.Duration, f func()) engine.Timer {
	t := &timer{c: c, fn: f}
	t.Reset(d)
	return t
}

// WithDeadline returns a copy of ctx that is done, with cause
// context.DeadlineExceeded, once the clock reaches at. A deadline is not
// counted by Waiters: nothing waits on it, it only bounds a call.
func (c *Fake) WithDeadline(ctx context.Context, at time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	if !at.After(c.now) {
		c.mu.Unlock()
		cancel(context.DeadlineExceeded)
		return ctx, func() { cancel(context.Canceled) }
	}
	w := &wait{at: at, cancel: cancel}
	c.addLocked(w)
	c.mu.Unlock()
	return ctx, func() {
		c.remove(w)
		cancel(context.Canceled)
	}
}

// Advance moves the clock forward by d and fires, in the order of their
// times, every sleep, timer and deadline due by then: a sleep returns, a
// timer's function starts in its own goroutine, a deadline's context is
// done. It does not wait for what it fired to finish.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*wait
	kept := c.waits[:0]
	for _, w := range c.waits {
		if w.at.After(c.now) {
			kept = append(kept, w)
		} else {
			due = append(due, w)
		}
	}
	clear(c.waits[len(kept):])
	c.waits = kept
	if len(due) > 0 {
		c.signalLocked()
	}
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *wait) int { return a.at.Compare(b.at) })
	for _, w := range due {
		w.fire()
	}
}

// Waiters counts the sleeps and timers waiting for the clock (deadlines
// are not counted).
func (c *Fake) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waitersLocked()
}

// BlockUntil returns once at least n sleeps and timers wait for the clock
// (so the code under test is parked on it and an Advance will reach it),
// or with context.Cause(ctx) once ctx is done.
func (c *Fake) BlockUntil(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		if c.waitersLocked() >= n {
			c.mu.Unlock()
			return nil
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (c *Fake) waitersLocked() int {
	n := 0
	for _, w := range c.waits {
		if w.cancel == nil {
			n++
		}
	}
	return n
}

func (c *Fake) addLocked(w *wait) {
	c.waits = append(c.waits, w)
	c.signalLocked()
}

// remove drops w if it is still pending, reporting whether it was.
func (c *Fake) remove(w *wait) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.waits, w)
	if i < 0 {
		return false
	}
	c.waits = slices.Delete(c.waits, i, i+1)
	c.signalLocked()
	return true
}

func (c *Fake) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (w *wait) fire() {
	switch {
	case w.wake != nil:
		close(w.wake)
	case w.fn != nil:
		go w.fn()
	case w.cancel != nil:
		w.cancel(context.DeadlineExceeded)
	}
}

// timer is an AfterFunc of a Fake.
type timer struct {
	c  *Fake
	fn func()
	mu sync.Mutex
	w  *wait // pending, or nil
}

// Stop cancels the call, reporting whether it was still pending.
func (t *timer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return false
	}
	ok := t.c.remove(t.w)
	t.w = nil
	return ok
}

// Reset schedules the call d from the clock's now, reporting whether it
// was still pending.
func (t *timer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	pending := false
	if t.w != nil {
		pending = t.c.remove(t.w)
	}
	c := t.c
	c.mu.Lock()
	w := &wait{at: c.now.Add(d), fn: t.fn}
	t.w = w
	if d <= 0 {
		c.mu.Unlock()
		go t.fn()
		return pending
	}
	c.addLocked(w)
	c.mu.Unlock()
	return pending
}
