package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/trace"
)

// TestExitCode: each way a run ends has its own exit code: a run this
// process's interruption stopped is 130, a run cancelled (also by a second
// Ctrl-C) is 5.
func TestExitCode(t *testing.T) {
	t.Parallel()
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	signalled, cancelSig := context.WithCancelCause(context.Background())
	cancelSig(&interrupt{sig: os.Interrupt})
	failed := func(c fault.Class) *engine.Result {
		return &engine.Result{Status: trace.RunFailed, Error: &engine.RunError{Class: c, Message: "x"}}
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		res  *engine.Result
		want int
	}{
		{"succeeded", live, &engine.Result{Status: trace.RunSucceeded}, exitOK},
		{"waiting", live, &engine.Result{Status: trace.RunWaiting}, exitWaiting},
		{"failed", live, failed(fault.Business), exitRunFailed},
		{"budget", live, failed(fault.Budget), exitRunFailed},
		{"lease lost", live, failed(fault.Conflict), exitConflict},
		{"cancelled", live, &engine.Result{Status: trace.RunCancelled, Error: &engine.RunError{Class: fault.Cancelled}}, exitCancelled},
		{"interrupted", done, &engine.Result{Status: trace.RunRunning, Interrupted: true, Error: &engine.RunError{Class: fault.Cancelled}}, exitInterrupted},
		{"cancelled after an interrupt", signalled, &engine.Result{Status: trace.RunCancelled, Error: &engine.RunError{Class: fault.Cancelled}}, exitCancelled},
		{"cancelled with the process", done, &engine.Result{Status: trace.RunCancelled, Error: &engine.RunError{Class: fault.Cancelled}}, exitInterrupted},
	} {
		if got := exitCode(c.ctx, c.res); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

// TestExitCodesOfCancelledAndHeldRuns: a run a person cancelled exits 5
// (not 130: nothing interrupted this process, nor 1: it did not fail), and
// a run another process holds exits 4 (nothing was done here), whatever
// command met it.
func TestExitCodesOfCancelledAndHeldRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newDurable(t, "approval")
	cancelled := fx.run(exitWaiting, `{}`)
	if code, _, stderr := fx.cli("runs", "cancel", cancelled.RunID); code != exitOK {
		t.Fatalf("cancel: exit %d %s", code, stderr)
	}
	code, out, stderr := fx.cli("runs", "resume", cancelled.RunID, "-o", "json")
	var res durableResult
	decodeOne(t, out, &res)
	if code != exitCancelled || res.Status != "cancelled" {
		t.Fatalf("resume a cancelled run: exit %d, want %d, status %s\n%s", code, exitCancelled, res.Status, stderr)
	}

	held := fx.run(exitWaiting, `{}`)
	st, err := sqlite.Open(ctx, fx.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.AcquireLease(ctx, &store.LeaseParams{RunID: held.RunID, Owner: "elsewhere", TTL: time.Minute, Now: time.Now()})
	_ = st.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"runs", "resume", held.RunID},
		{"runs", "cancel", held.RunID},
		{"runs", "approve", held.RunID, "review"}, // recorded, but the resume is refused
	} {
		code, _, stderr := fx.cli(args...)
		if code != exitConflict || !strings.Contains(stderr, "elsewhere") {
			t.Errorf("%v of a run another process holds: exit %d, want %d\n%s", args, code, exitConflict, stderr)
		}
	}
	wantCalls(t, fx.calls(), "draft", "draft")
}
