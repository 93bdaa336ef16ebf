package clocktest

import (
	"testing"
	"time"
)

func TestSkewed(t *testing.T) {
	t.Parallel()
	c := Skewed(time.Hour)
	if d := time.Until(c.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("a clock an hour ahead reads %v from now", d)
	}
	// a deadline a second ahead on the skewed clock is a second of real time.
	ctx, cancel := c.WithDeadline(t.Context(), c.Now().Add(time.Second))
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Second || time.Until(dl) < 0 {
		t.Fatalf("deadline %v, want within a second of real time", dl)
	}
}
