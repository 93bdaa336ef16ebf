package sched

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/journal"
)

// The error-class rules (docs/ARCHITECTURE.md "Error classes"), the when
// rule and the run's outcome, as decisions of the machine: they read the
// flow, the run's id and their arguments only.

// Verdict is what Admit decides for a step about to start.
type Verdict int

// Admit's verdicts.
const (
	Run  Verdict = iota // start its first attempt
	Skip                // settle it skipped (Admission.Reason says why)
	Fail                // settle it failed, a business failure (Admission.Reason is the error)
)

// Admission is Admit's answer.
type Admission struct {
	Verdict Verdict
	Reason  string
}

// Admit decides whether step i, taken off the ready queue, runs: a step
// whose requires were skipped (along explicit requires and the steps whose
// output it reads, never the implicit order of a plain list) is skipped,
// then its when expression is evaluated on env (the run's scope: input
// fields, settled outputs by id, "steps"). A step that would be skipped
// but is mandatory fails, and so does one whose when cannot be evaluated.
// ctx bounds the evaluation only; a driver whose ctx ended discards the
// answer.
func (m *Machine) Admit(ctx context.Context, i int, env map[string]any) Admission {
	s := m.f.Steps[i]
	why := ""
	if up := m.SkippedUpstream(i); up != "" {
		why = "upstream step " + up + " was skipped"
	} else if s.When != nil {
		ok, err := s.When.EvalContext(ctx, env)
		if err != nil {
			return Admission{Fail, fmt.Sprintf("when %q could not be evaluated: %v", s.When.Source(), err)}
		}
		if ok {
			return Admission{Verdict: Run}
		}
		why = fmt.Sprintf("when %q was false", s.When.Source())
	} else {
		return Admission{Verdict: Run}
	}
	if s.Mandatory {
		return Admission{Fail, "mandatory step cannot be skipped: " + why}
	}
	return Admission{Skip, why}
}

// SkippedUpstream names the step whose skip skips step i (a step of
// s.SkipFrom that was skipped), or "".
func (m *Machine) SkippedUpstream(i int) string {
	for _, j := range m.f.Steps[i].SkipFrom {
		if m.status[j] == journal.StepSkipped {
			return m.f.Steps[j].ID
		}
	}
	return ""
}

// StopsRun reports whether a failure of class stops the run whatever the
// step says: budget, policy, cancellation and a damaged store, or any
// failure once the run's own context ended (stopped).
func StopsRun(class fault.Class, stopped bool) bool {
	return stopped || class == fault.Budget || class == fault.Cancelled || class == fault.Policy || class == fault.Damaged || class == fault.Guardrail
}

// RetryAt is Retry's answer: start attempt Attempt at time At, or, when
// Again is false, the failure is final (RecoverStep says what it means).
type RetryAt struct {
	Again   bool
	Attempt int
	At      time.Time
}

// Retry decides what follows the failure of attempt n of step i (or of one
// of its for_each items or repeat rounds) with an error of class, after
// made retries: a transient failure, or any failure of a step with
// on_error: retry, is tried again while fewer than the step's retries were
// made, after the step's backoff (jittered from the run's id, the step and
// the retry's number, so a replay waits the same) or retryAfter when the
// failure asked for longer (Retry-After). stopped says the run's context
// ended. Retry reads only the flow and the run's id: it is safe to call
// from the driver's workers concurrently with the machine's other methods.
func (m *Machine) Retry(i int, class fault.Class, n, made int, retryAfter time.Duration, stopped bool, now time.Time) RetryAt {
	s := m.f.Steps[i]
	if StopsRun(class, stopped) || !retries(s, class, made) {
		return RetryAt{}
	}
	return RetryAt{Again: true, Attempt: n + 1, At: now.Add(retryWait(s, m.runID, made+1, retryAfter))}
}

// retries reports whether a failed attempt is tried again: a transient
// failure (not of an agent step), or any failure of a step with on_error:
// retry, while fewer than the step's retries were made (done).
func retries(s *flow.Step, class fault.Class, done int) bool {
	if s.Type == flow.Agent && s.OnError != flow.Retry {
		// an agent step's retries are its model calls' (package agent): a
		// new attempt would run its loop, and its calls, again.
		return false
	}
	return (class == fault.Transient || s.OnError == flow.Retry) && done < s.Retries
}

// retryWait is how long the n-th retry of step s waits: the step's backoff
// with jitter hashed from run, step and n, or longer when the failure
// asked for it (retryAfter, from Retry-After).
func retryWait(s *flow.Step, runID string, n int, retryAfter time.Duration) time.Duration {
	return max(Backoff(s.Backoff, runID, s.ID, n), retryAfter)
}

// Backoff is the wait before retry n (1-based): exponential, capped, with
// a jitter in [½, 1] drawn deterministically from run, step and n.
func Backoff(b flow.Backoff, runID, stepID string, n int) time.Duration {
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

// Recovery is what on_error makes of a step's final failure.
type Recovery int

// The recoveries.
const (
	FailStep       Recovery = iota // the step fails, and with it the run
	StopWithRun                    // the failure stops the run (StopsRun)
	EscalateStep                   // park the step for a person
	DefaultStep                    // settle it with fallback_value (defaulted)
	FallBack                       // run its fallback (fell_back)
	FailWholeItems                 // a for_each step failed as a whole: nothing to fill
)

// RecoverStep decides what the final failure of step s with an error of
// class means; stopped says the run's context ended.
func RecoverStep(s *flow.Step, class fault.Class, stopped bool) Recovery {
	switch {
	case StopsRun(class, stopped):
		return StopWithRun
	case s.OnError == flow.Escalate:
		return EscalateStep
	case s.ForEach != nil:
		// on_error applies per item (RecoverItem); a failure of the step
		// as a whole (its items, its gate, its size) has no slot to fill.
		return FailWholeItems
	case s.OnError == flow.Skip:
		return DefaultStep
	case s.OnError == flow.Fallback:
		return FallBack
	}
	return FailStep
}

// RecoverItem decides what the final failure of one for_each item of
// step s means.
func RecoverItem(s *flow.Step, class fault.Class, stopped bool) Recovery {
	switch {
	case StopsRun(class, stopped):
		return StopWithRun
	case s.OnError == flow.Skip:
		return DefaultStep
	case s.OnError == flow.Fallback:
		return FallBack
	}
	return FailStep
}

// Outcome is the status a run settles with: whether it failed and its
// first failure's class, whether steps wait on a person (the machine's
// Pending), and whether the caller's context ended (a cancellation,
// unless the budget ran out).
func (m *Machine) Outcome(failed bool, class fault.Class, callerDone bool) journal.RunStatus {
	return runOutcome(failed, class, len(m.pending) > 0, callerDone)
}

// runOutcome is Outcome with the parked state given.
func runOutcome(failed bool, class fault.Class, parked, callerDone bool) journal.RunStatus {
	switch {
	case !failed && parked:
		return journal.RunWaiting
	case !failed:
		return journal.RunSucceeded
	case class == fault.Cancelled || callerDone && class != fault.Budget:
		return journal.RunCancelled
	}
	return journal.RunFailed
}
