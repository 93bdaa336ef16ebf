package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/trace"
)

// runUnit is one execution of a step (one for_each item, one repeat round,
// or the step itself): it charges the iteration to the run's budget (not
// again for an agent step continuing its session: durability.continued),
// makes the attempts, and after each failure carries out what the machine
// decides (sched.Machine.Retry: attempt n+1 at time T, waited for with the
// engine's clock, or a final failure). A format error from a model was
// already corrected once inside the call (model.Decide).
func (r *run) runUnit(ctx context.Context, j *job, in unitInput, o *outcome) (any, error) {
	s := j.step
	if !r.d.continued[j.index] { // an agent step continuing its session was charged when it first ran
		if err := r.budget.Iteration(); err != nil {
			o.origin = trace.OriginEngine
			return nil, err
		}
	}
	done := 0 // retries made
	first := 1
	if n := r.d.firstAttempt[j.index]; n > 0 {
		first = n
	}
	for attempt := first; ; {
		o.attempts = attempt
		if attempt > first {
			r.beginAttempt(j, attempt)
			if err := ctx.Err(); err != nil {
				return nil, r.ctxCause(err) // stopped before the retry was journaled
			}
		}
		out, origin, err := r.attempt(ctx, j, in, attempt)
		if err == nil {
			return out, nil
		}
		var w *agentWait
		if errors.As(err, &w) || errors.Is(err, errHeld) {
			return nil, err // not a failure: the step parks, or is held
		}
		o.origin = origin
		premise := PremiseFailed(err)
		if premise {
			r.hold() // no step in flight starts a new unit, from before this failure is recorded
		}
		class := fault.ClassOf(err)
		r.recordGuardStop(s, attempt, err)
		r.recordAttemptFailed(s, attempt, in.item, err, origin)
		now := r.e.cfg.Clock.Now()
		next := r.m.Retry(j.index, class, attempt, done, fault.RetryAfterOf(err), ctx.Err() != nil, now)
		if !next.Again || premise { // a premise that fails stops first: never retried
			return nil, err
		}
		done++
		if serr := r.e.cfg.Clock.Sleep(ctx, next.At.Sub(now)); serr != nil {
			return nil, r.ctxCause(serr)
		}
		attempt = next.Attempt
	}
}

// attempt makes one call under the step's timeout and checks its gate.
func (r *run) attempt(ctx context.Context, j *job, in unitInput, attempt int) (out any, origin trace.Origin, err error) {
	s := j.step
	actx := ctx
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeoutCause(ctx, s.Timeout, stepTimeout(s))
		defer cancel()
	}
	out, origin, err = r.b.kinds[j.index].call(r, actx, j, in, attempt)
	if err != nil {
		if actx.Err() != nil {
			err = withCause(err, actx)
		}
		return nil, origin, err
	}
	if s.Gate != nil && s.ForEach == nil {
		if gerr := r.checkGate(actx, j, out); gerr != nil {
			return nil, trace.OriginEngine, gerr
		}
	}
	if s.Premise != nil && s.ForEach == nil {
		if perr := r.checkPremise(actx, j, out); perr != nil {
			return nil, trace.OriginEngine, perr
		}
	}
	return out, origin, nil
}

// stepTimeout is the cause of a context that step s's timeout ended: a
// transient error, so its retries apply.
func stepTimeout(s *flow.Step) error {
	return fault.TransientErr(fmt.Errorf("timed out after %s (the step's timeout)", s.Timeout))
}

// evalCtx is the context an evaluation of step s's expressions outside
// its attempts (when, for_each, repeat.until, a for_each step's gate)
// runs under: the run's, ended by the step's timeout too, so that a heavy
// expression stops at whichever comes first. The caller calls the
// CancelFunc once the evaluation returned.
func (r *run) evalCtx(s *flow.Step) (context.Context, context.CancelFunc) {
	if s.Timeout <= 0 {
		return r.ctx, func() {}
	}
	return context.WithTimeoutCause(r.ctx, s.Timeout, stepTimeout(s))
}

// withCause replaces a bare context error by the context's cause (the step
// timeout, the run budget, or the run's failure), keeping the message.
func withCause(err error, ctx context.Context) error {
	cause := context.Cause(ctx)
	if cause == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return err
	}
	if fault.ClassOf(err) != fault.Cancelled && fault.ClassOf(err) != fault.Transient {
		return err
	}
	return cause
}

// ctxCause turns a context error of the run into its cause.
func (r *run) ctxCause(err error) error {
	if r.ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		if c := context.Cause(r.ctx); c != nil {
			return c
		}
	}
	return err
}

func (r *run) recordAttemptFailed(s *flow.Step, attempt, item int, err error, origin trace.Origin) {
	msg := err.Error()
	if item >= 0 {
		msg = fmt.Sprintf("item %d: %s", item, msg)
	}
	r.record(trace.Event{Kind: trace.AttemptFailed, StepID: s.ID, StepType: string(s.Type), Attempt: attempt,
		Status: "failed", ErrorClass: string(fault.ClassOf(err)), Error: msg, Origin: origin, Budget: fault.BudgetOf(err),
		Chain: journal.Chain(err, r.e.cfg.Redactor)})
}

// recordCorrection traces a corrective request of attempt and counts it.
func (r *run) recordCorrection(j *job, attempt, item int, problems error) {
	msg := problems.Error()
	if item >= 0 {
		msg = fmt.Sprintf("item %d: %s", item, msg)
	}
	s := j.step
	r.record(trace.Event{Kind: trace.CorrectiveRetry, StepID: s.ID, StepType: string(s.Type), Attempt: attempt,
		Status: "corrected", ErrorClass: string(fault.Format), Error: msg, Origin: trace.OriginModel})
	r.addUse(j.index, stepUse{corrections: 1})
}

// toRunError converts any error into a RunError.
func toRunError(err error, step string, origin trace.Origin) *RunError {
	var re *RunError
	if errors.As(err, &re) {
		return re
	}
	class := fault.ClassOf(err)
	if class == fault.Budget || class == fault.Cancelled {
		origin = trace.OriginEngine
	}
	return &RunError{Class: class, Step: step, Budget: fault.BudgetOf(err), Origin: origin, Message: err.Error(), err: err}
}
