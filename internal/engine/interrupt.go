package engine

import (
	"context"
	"errors"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/trace"
)

// ErrInterrupted is the cause to cancel a run's context with when the
// process stops but the run should not (Ctrl-C on rein run, a worker's
// shutdown): context.WithCancelCause, then cancel(ErrInterrupted) or an
// error that wraps it. A durable run then commits nothing more — neither a
// cancellation nor the failure of the steps it cancels in flight — waits
// for its steps in flight to return (an exec tool's process group is
// killed), releases its lease and returns a Result with Interrupted set.
// The run stays as its last committed transition left it: Resume takes it
// up at once, runs a step that was in flight again if it is idempotent,
// and otherwise parks it as unknown, as after a crash. Any other cause
// cancels the run; a run without a durable store cannot be resumed, and
// ErrInterrupted cancels it too.
var ErrInterrupted = fault.New(fault.Cancelled, errors.New("interrupted: this process stopped; the run stays resumable"))

// interrupted reports whether the run is durable and its context ended
// with ErrInterrupted: from then on nothing is committed. Safe for
// concurrent use.
func (r *run) interrupted() bool {
	return r.d.on && r.ctx.Err() != nil && errors.Is(context.Cause(r.ctx), ErrInterrupted)
}

// take accepts an outcome from a worker. Once the run is interrupted the
// outcome is dropped: it says how the interruption ended the step, which is
// not the step's result, and the step stays as its last commit left it.
func (r *run) take(o *outcome) {
	r.running--
	if r.interrupted() {
		return
	}
	r.settle(o)
}

// stop ends an interrupted run: the transition being assembled is
// dropped, the lease released, and the Result says where the run stands
// (steps in flight are running).
func (r *run) stop(res *Result) *Result {
	r.recordMu.Lock()
	r.discardLocked()
	r.recordMu.Unlock()
	r.endLease()
	res.Status = trace.RunRunning
	res.Interrupted = true
	res.Error = &RunError{Class: fault.Cancelled, Origin: trace.OriginEngine, Message: context.Cause(r.ctx).Error(), err: context.Cause(r.ctx)}
	return res
}
