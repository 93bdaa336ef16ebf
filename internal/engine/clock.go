package engine

import (
	"context"
	"time"
)

// Clock is the engine's source of time: event timestamps, durations and the
// waits between retries. Inject one for deterministic tests.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done, returning context.Cause(ctx) then.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the wall clock.
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
