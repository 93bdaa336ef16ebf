package clocktest

import (
	"context"
	"time"

	"github.com/reinhq/rein/internal/engine"
)

// Skewed returns the wall clock read d ahead (behind, for a negative d):
// the clock of a host whose time is off by d, or of a process that is to
// find a lease expired that the wall clock says still holds. Its sleeps,
// timers and deadlines take real time.
func Skewed(d time.Duration) engine.Clock { return skewed(d) }

type skewed time.Duration

func (s skewed) Now() time.Time { return time.Now().Add(time.Duration(s)) }

func (skewed) Sleep(ctx context.Context, d time.Duration) error {
	return engine.SystemClock.Sleep(ctx, d)
}

func (skewed) AfterFunc(d time.Duration, f func()) engine.Timer {
	return engine.SystemClock.AfterFunc(d, f)
}

func (s skewed) WithDeadline(ctx context.Context, at time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, at.Add(-time.Duration(s)))
}
