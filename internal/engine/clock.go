package engine

import (
	"context"
	"time"
)

// Clock is the engine's source of time: event timestamps, durations, the
// waits between retries, and a durable run's lease — the time every lease
// call passes to the store (store.LeaseParams.Now) and the timers of its
// heartbeat. Inject one for deterministic tests; package
// internal/engine/clocktest has a virtual one that a test advances.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done, returning context.Cause(ctx) then.
	Sleep(ctx context.Context, d time.Duration) error
	// AfterFunc calls f in its own goroutine once d has passed on this
	// clock, unless the returned Timer is stopped first (time.AfterFunc).
	AfterFunc(d time.Duration, f func()) Timer
	// WithDeadline returns a copy of ctx that is done once this clock
	// reaches at, with context.DeadlineExceeded as its cause
	// (context.WithDeadline); cancel releases it.
	WithDeadline(ctx context.Context, at time.Time) (context.Context, context.CancelFunc)
}

// Timer is a pending AfterFunc call. Stop and Reset behave as
// time.Timer's: Stop reports whether it stopped the call before it ran,
// Reset schedules the call d from now again.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// SystemClock is the wall clock. Its timers are time's own (*time.Timer),
// so the real path allocates nothing a plain time.AfterFunc would not.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

func (systemClock) WithDeadline(ctx context.Context, at time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, at)
}
