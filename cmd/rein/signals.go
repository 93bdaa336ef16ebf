package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// interrupt is the cause of a command's context once SIGINT or SIGTERM
// arrived. It wraps engine.ErrInterrupted: a run stops and stays
// resumable; interrupting the process is not cancelling the run. A second
// SIGINT is counted (again): a command that stopped a run then cancels it.
type interrupt struct {
	sig   os.Signal
	again atomic.Bool
}

func (i *interrupt) Error() string {
	return fmt.Sprintf("interrupted by %s: this process stopped; the run stays resumable", signalName(i.sig))
}

func (i *interrupt) Unwrap() error { return rein.ErrInterrupted }

// signalName names a signal the way shells do.
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// interruptOf returns the interrupt that ended ctx, or nil.
func interruptOf(ctx context.Context) *interrupt {
	var in *interrupt
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &in) {
		return in
	}
	return nil
}

// notifyInterrupts returns a context that the first SIGINT or SIGTERM
// cancels with an *interrupt as its cause; later SIGINTs mark it again.
// stop stops listening and releases the context.
func notifyInterrupts(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first *interrupt
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				switch {
				case first == nil:
					first = &interrupt{sig: sig}
					cancel(first)
				case sig == os.Interrupt:
					first.again.Store(true)
				}
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// afterInterrupt finishes a run the engine stopped because this process was
// interrupted (res.Interrupted). By default the run stays resumable, and
// stderr says how to go on or cancel it. With cancel (--cancel-on-interrupt)
// or after a second SIGINT the run is cancelled here, as rein runs cancel
// would, and its result is the cancelled run's. Any other result comes
// back as it is.
func afterInterrupt(ctx context.Context, s *streams, st store.Store, dsn string, res *rein.Result, cancel bool) (*rein.Result, error) {
	if !res.Interrupted {
		return res, nil
	}
	why := "interrupted"
	if in := interruptOf(ctx); in != nil {
		why = "interrupted by " + signalName(in.sig)
		if in.again.Load() {
			cancel, why = true, "interrupted twice (Ctrl-C)"
		}
	}
	running := inFlight(res)
	ctx = context.WithoutCancel(ctx)
	if _, err := st.GetRun(ctx, res.RunID); errors.Is(err, store.ErrNotFound) {
		fmt.Fprintf(s.err, "rein: %s before run %s committed anything; nothing is left to resume: run the flow again\n", why, res.RunID)
		return res, nil
	}
	if cancel {
		c, err := rein.Open(ctx, rein.Config{Store: st, Sink: s.withTelemetry(nil)})
		if err != nil {
			return nil, failed("run %s: %v", res.RunID, err)
		}
		if _, err := c.Cancel(ctx, res.RunID, "cancelled: "+why); err != nil {
			return nil, failed("%s: run %s stopped but could not be cancelled: %v; it stays resumable (rein runs resume %s), or cancel it with rein runs cancel %s", why, res.RunID, err, res.RunID, res.RunID)
		}
		out, err := c.Status(ctx, res.RunID)
		if err != nil {
			return nil, failed("run %s: %v", res.RunID, err)
		}
		fmt.Fprintf(s.err, "rein: %s: run %s cancelled", why, res.RunID)
		if running != "" {
			fmt.Fprintf(s.err, "; %s was running and was stopped: its effect may have begun", running)
		}
		fmt.Fprintln(s.err)
		return out, nil
	}
	if dsn == ":memory:" {
		fmt.Fprintf(s.err, "rein: %s: run %s stopped; the run store is :memory:, so it is gone once rein exits (run with --db FILE to resume later)\n", why, res.RunID)
		return res, nil
	}
	db := ""
	if dsn != "" && dsn != defaultDB {
		db = " --db " + shellQuote(redactDSN(dsn))
	}
	fmt.Fprintf(s.err, "rein: %s: run %s stopped and stays resumable", why, res.RunID)
	if running != "" {
		fmt.Fprintf(s.err, " (%s was running: on resume it runs again if idempotent, and otherwise waits for a person to say whether its effect happened)", running)
	}
	fmt.Fprintf(s.err, "\n  go on:  rein runs resume %s%s\n  cancel: rein runs cancel %s%s\n", res.RunID, db, res.RunID, db)
	return res, nil
}

// inFlight names the steps of res that were running, "" if none.
func inFlight(res *rein.Result) string {
	var ids []string
	for id, st := range res.Steps {
		if st.Status == trace.StepRunning {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	switch len(ids) {
	case 0:
		return ""
	case 1:
		return "step " + ids[0]
	}
	return "steps " + strings.Join(ids, ", ")
}
