package engine

import (
	"context"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/reinhq/rein/flow"
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

// backoffDelay is the wait before retry n (1-based): exponential, capped,
// with a jitter in [½, 1] drawn deterministically from run, step and n, so
// a replay waits the same.
func backoffDelay(b flow.Backoff, runID, stepID string, n int) time.Duration {
	d := float64(b.Initial)
	for i := 1; i < n && d < float64(b.Max); i++ {
		d *= b.Multiplier
	}
	if d > float64(b.Max) {
		d = float64(b.Max)
	}
	h := fnv.New64a()
	h.Write([]byte(runID))
	h.Write([]byte{0})
	h.Write([]byte(stepID))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(n), 10))
	frac := 0.5 + 0.5*float64(h.Sum64()%1_000_000)/1_000_000
	return time.Duration(d * frac)
}
