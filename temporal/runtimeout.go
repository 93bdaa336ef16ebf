package temporal

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
)

// changeRunTimeout: a flow's budgets.timeout bounds the run in workflow
// code (a timer; its steps' activities are cancelled when it fires).
// Before, only each attempt applied it, from the attempt's own start.
// Asked only for a flow with budgets.timeout, so that other histories
// record no marker.
const changeRunTimeout = "rein-run-timeout"

// runClock is the run's budgets.timeout in workflow code. It runs while
// the run runs, as a local run's process does (engine run.begin): from the
// run's first start, and again in full from each time it goes on after
// waiting for a person (a local run waiting for a person is parked, no
// process and no clock, and its resume starts the clock again) and from a
// retry (a local retry does too). A continue-as-new carries its deadline
// (Carry.Deadline). When it passes, the run fails with the budget error
// sched.Budget.Timeout names (class budget, as a local run: "the run ran
// past its budget timeout of …") and the context its steps run in is
// cancelled: their activities are cancelled (a running attempt's context
// ends at its next heartbeat), and nothing more starts.
type runClock struct {
	// on: the flow has a timeout and the run's version sets the timer.
	on bool
	// deadline is when the armed clock passes (zero: not armed).
	deadline time.Time
	// stop cancels the armed timer; cancelSteps the steps' context.
	stop, cancelSteps workflow.CancelFunc
}

// startClock decides whether the run has a clock (asking its version
// once, in drive, for a flow with budgets.timeout) and arms it: to the
// deadline a continue-as-new carried, else from now. It returns the
// context the run's steps start in.
func (r *wrun) startClock(ctx workflow.Context) workflow.Context {
	if r.f.Budgets.Timeout <= 0 || version(ctx, changeRunTimeout) == workflow.DefaultVersion {
		return ctx
	}
	r.clock.on = true
	deadline := workflow.Now(ctx).Add(r.f.Budgets.Timeout)
	if c := r.in.Carry; c != nil && c.Deadline != nil && r.in.Retry == nil {
		deadline = *c.Deadline // a retry's new execution starts the clock again
	}
	return r.armClock(ctx, deadline)
}

// rearmClock starts the clock again in full (the run goes on after a wait
// or a retry) and returns the steps' new context.
func (r *wrun) rearmClock(ctx workflow.Context) workflow.Context {
	if !r.clock.on {
		return ctx
	}
	return r.armClock(ctx, workflow.Now(ctx).Add(r.f.Budgets.Timeout))
}

// armClock sets the timer to deadline; a deadline already passed fails
// the run at once.
func (r *wrun) armClock(ctx workflow.Context, deadline time.Time) workflow.Context {
	r.stopClock()
	if r.clock.cancelSteps != nil {
		r.clock.cancelSteps() // nothing runs in it: the run settled or waited
	}
	sctx, cancelSteps := workflow.WithCancel(ctx)
	r.clock.cancelSteps = cancelSteps
	r.clock.deadline = deadline
	d := deadline.Sub(workflow.Now(ctx))
	if d <= 0 {
		r.clockPassed()
		return sctx
	}
	tctx, stop := workflow.WithCancel(ctx)
	r.clock.stop = stop
	workflow.Go(ctx, func(gctx workflow.Context) {
		if workflow.NewTimer(tctx, d).Get(gctx, nil) == nil && r.clock.deadline.Equal(deadline) {
			r.clockPassed()
		}
	})
	return sctx
}

// clockPassed fails the run on its timeout and cancels its steps.
func (r *wrun) clockPassed() {
	_, cause := r.budget.Timeout()
	r.fail("", fault.ClassOf(cause), cause.Error())
	r.clock.deadline, r.clock.stop = time.Time{}, nil
	r.clock.cancelSteps()
}

// stopClock disarms the clock (the run settled or waits for a person).
func (r *wrun) stopClock() {
	if r.clock.stop != nil {
		r.clock.stop()
	}
	r.clock.deadline, r.clock.stop = time.Time{}, nil
}

// carriedDeadline is the armed clock's deadline for Carry (nil: none).
func (r *wrun) carriedDeadline() *time.Time {
	if r.clock.deadline.IsZero() {
		return nil
	}
	d := r.clock.deadline
	return &d
}
