package clocktest

import (
	"context"
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

func TestSleepWakesWhenAdvancedFarEnough(t *testing.T) {
	t.Parallel()
	c := New(t0)
	done := make(chan error, 1)
	go func() { done <- c.Sleep(t.Context(), time.Minute) }()
	if err := c.BlockUntil(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute - time.Nanosecond)
	select {
	case err := <-done:
		t.Fatalf("Sleep(1m) returned (%v) a nanosecond early", err)
	default:
	}
	if c.Waiters() != 1 {
		t.Fatalf("Waiters = %d, want the sleep", c.Waiters())
	}
	c.Advance(time.Nanosecond)
	if err := <-done; err != nil {
		t.Fatalf("Sleep: %v", err)
	}
	if got := c.Now(); !got.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Now = %v", got)
	}
	if c.Waiters() != 0 {
		t.Fatalf("Waiters = %d after the sleep returned", c.Waiters())
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	t.Parallel()
	c := New(t0)
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Sleep(ctx, time.Hour) }()
	if err := c.BlockUntil(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("Sleep = %v, want the context's cause", err)
	}
	if c.Waiters() != 0 {
		t.Fatalf("a cancelled sleep still waits: %d", c.Waiters())
	}
}

func TestAfterFuncFiresInOrderAndStops(t *testing.T) {
	t.Parallel()
	c := New(t0)
	fired := make(chan string, 3)
	c.AfterFunc(2*time.Second, func() { fired <- "b" })
	c.AfterFunc(time.Second, func() { fired <- "a" })
	stopped := c.AfterFunc(time.Second, func() { fired <- "stopped" })
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer = false")
	}
	if c.Waiters() != 2 {
		t.Fatalf("Waiters = %d, want 2", c.Waiters())
	}
	c.Advance(time.Second)
	if got := <-fired; got != "a" {
		t.Fatalf("fired %s, want a", got)
	}
	r := c.AfterFunc(time.Hour, func() { fired <- "reset" })
	if !r.Reset(time.Second) {
		t.Fatal("Reset of a pending timer = false")
	}
	c.Advance(time.Second)
	got := map[string]bool{<-fired: true, <-fired: true}
	if !got["b"] || !got["reset"] {
		t.Fatalf("fired %v, want b and reset", got)
	}
	select {
	case s := <-fired:
		t.Fatalf("%s fired", s)
	default:
	}
}

func TestWithDeadline(t *testing.T) {
	t.Parallel()
	c := New(t0)
	ctx, cancel := c.WithDeadline(t.Context(), t0.Add(time.Second))
	defer cancel()
	if c.Waiters() != 0 {
		t.Fatalf("a deadline counts as a waiter: %d", c.Waiters())
	}
	c.Advance(time.Second - time.Nanosecond)
	if ctx.Err() != nil {
		t.Fatal("the deadline passed early")
	}
	c.Advance(time.Nanosecond)
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("cause %v, want DeadlineExceeded", context.Cause(ctx))
	}
	past, cancel2 := c.WithDeadline(t.Context(), t0)
	defer cancel2()
	if !errors.Is(context.Cause(past), context.DeadlineExceeded) {
		t.Fatalf("a deadline already passed: cause %v", context.Cause(past))
	}
}
