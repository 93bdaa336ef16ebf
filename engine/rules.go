package engine

import (
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/trace"
)

// The error-class rules of shared/DESIGN.md §3 as pure functions of the
// step, the error's class and what the run knows: no I/O, no clock. The
// workers apply them (unit.go, work.go); a workflow interpreter applies the
// same ones.

// stopsRun reports whether a failure of class stops the run whatever the
// step says: budget, policy and cancellation, or any failure once the
// run's own context ended (stopped).
func stopsRun(class fault.Class, stopped bool) bool {
	return stopped || class == fault.Budget || class == fault.Cancelled || class == fault.Policy
}

// retries reports whether a failed attempt is tried again: a transient
// failure, or any failure of a step with on_error: retry, while fewer than
// the step's retries were made (done).
func retries(s *flow.Step, class fault.Class, done int) bool {
	return (class == fault.Transient || s.OnError == flow.Retry) && done < s.Retries
}

// retryWait is how long the n-th retry of step s waits: the step's backoff
// with jitter hashed from run, step and n, or longer when the failure
// asked for it (retryAfter, from Retry-After).
func retryWait(s *flow.Step, runID string, n int, retryAfter time.Duration) time.Duration {
	return max(backoffDelay(s.Backoff, runID, s.ID, n), retryAfter)
}

// recovery is what on_error makes of a step's final failure.
type recovery int

const (
	failStep       recovery = iota // the step fails, and with it the run
	stopWithRun                    // the failure stops the run (stopsRun)
	escalateStep                   // park the step for a person
	defaultStep                    // settle it with fallback_value (defaulted)
	fallBack                       // run its fallback (fell_back)
	failWholeItems                 // a for_each step failed as a whole: nothing to fill
)

// recoverStep decides what a step's final failure of class means; stopped
// says the run's context ended.
func recoverStep(s *flow.Step, class fault.Class, stopped bool) recovery {
	switch {
	case stopsRun(class, stopped):
		return stopWithRun
	case s.OnError == flow.Escalate:
		return escalateStep
	case s.ForEach != nil:
		// on_error applies per item (recoverItem); a failure of the step
		// as a whole (its items, its gate, its size) has no slot to fill.
		return failWholeItems
	case s.OnError == flow.Skip:
		return defaultStep
	case s.OnError == flow.Fallback:
		return fallBack
	}
	return failStep
}

// recoverItem decides what the final failure of one for_each item means.
func recoverItem(s *flow.Step, class fault.Class, stopped bool) recovery {
	switch {
	case stopsRun(class, stopped):
		return stopWithRun
	case s.OnError == flow.Skip:
		return defaultStep
	case s.OnError == flow.Fallback:
		return fallBack
	}
	return failStep
}

// runOutcome is the status a run settles with: its first failure (nil if
// none), whether steps wait on a person, and whether the caller's context
// ended (a cancellation, unless the budget ran out).
func runOutcome(failure *RunError, parked, callerDone bool) trace.RunStatus {
	switch {
	case failure == nil && parked:
		return trace.RunWaiting
	case failure == nil:
		return trace.RunSucceeded
	case failure.Class == fault.Cancelled || callerDone && failure.Class != fault.Budget:
		return trace.RunCancelled
	}
	return trace.RunFailed
}
