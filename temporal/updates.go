package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/value"
)

// defaultRetryWindow is how long a failed run recorded before
// rein-retry-closed stays open for UpdateRetry when Workflow.RetryWindow
// is zero (a later run closes at once: awaitRetry).
const defaultRetryWindow = 24 * time.Hour

// submitUpdates registers UpdateSubmit and UpdateRetry beside
// UpdateDecide (handlers).
func (r *wrun) submitUpdates(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSubmit, r.submit,
		workflow.UpdateHandlerOptions{Validator: r.validateSubmit}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateRetry, r.retry,
		workflow.UpdateHandlerOptions{Validator: r.validateRetry})
}

// validateSubmit refuses a submission the run cannot take, before it is
// written to the history: a step that waits for no submission (an agent's
// or a person's output: store.KindSubmission), data that is not JSON, or
// an output that breaks the step's contract (its output_schema,
// max_output_bytes and gate, as the local workflow tool checks a
// submission).
func (r *wrun) validateSubmit(_ workflow.Context, d Decision) error {
	i, err := r.stepIndex(d.Step)
	if err != nil {
		return err
	}
	if d.Action != "" && d.Action != ActionSubmit {
		return fmt.Errorf("update %s takes action %q or none, not %q", UpdateSubmit, ActionSubmit, d.Action)
	}
	waits := false
	for _, p := range r.m.Pending() {
		if p.Step == i && p.Kind == store.KindSubmission {
			waits = true
		}
	}
	if !waits || r.answers[i] != nil {
		return fmt.Errorf("step %s of run %s waits for no submission (it is %s): submit to a step that waits for an agent's output", d.Step, r.runID, r.m.Status(i))
	}
	if len(d.Output) == 0 {
		return fmt.Errorf("submit needs data: step %s's output as JSON", d.Step)
	}
	var out any
	if err := json.Unmarshal(d.Output, &out); err != nil {
		return fmt.Errorf("submit step %s: the data is not JSON (%w): submit the output as one JSON value", d.Step, err)
	}
	buf, err := value.Canonical(out)
	if err != nil {
		return fmt.Errorf("submit step %s: the data is not JSON: %w", d.Step, err)
	}
	if s := r.f.Steps[i]; int64(len(buf)) > s.MaxOutputBytes {
		return fmt.Errorf("submit step %s: the output is %d bytes, more than max_output_bytes %d", d.Step, len(buf), s.MaxOutputBytes)
	}
	if err := engine.CheckSettled(r.f, i, out); err != nil {
		return err
	}
	return r.checkSubmittedGate(i, out)
}

// checkSubmittedGate holds a submitted output to step i's gate, on the
// run's scope with the output as output and as the step's id, as the
// local workflow tool does. Expressions are pure: the validator may.
func (r *wrun) checkSubmittedGate(i int, out any) error {
	s := r.f.Steps[i]
	if s.Gate == nil {
		return nil
	}
	scope := r.scope()
	scope["output"], scope[s.ID] = out, out
	ok, err := s.Gate.EvalContext(context.Background(), scope)
	switch {
	case err != nil:
		return fmt.Errorf("submit step %s: gate %q could not be evaluated on the output: %w", s.ID, s.Gate.Source(), err)
	case !ok:
		return fmt.Errorf("submit step %s: gate %q does not hold on the output: change the output so that it holds", s.ID, s.Gate.Source())
	}
	return nil
}

// submit takes a validated submission: the step settles with it (as a
// settle decision by its submitter) once nothing else runs.
func (r *wrun) submit(ctx workflow.Context, d Decision) error {
	if err := r.validateSubmit(ctx, d); err != nil {
		return err
	}
	i, _ := r.stepIndex(d.Step)
	if d.By == "" {
		d.By = "agent"
	}
	d.Action = ActionSettle
	r.answers[i] = &answer{a: sched.Answered{Status: store.ApprovalSettled, Kind: store.KindSubmission}, d: d}
	r.inbox = append(r.inbox, i)
	return nil
}

// validateRetry refuses a retry the run cannot take: the run is not
// failed (or no longer takes one: its retry window passed), or the steps
// it would re-open cannot run again (sched.Reopens: a blocked or unknown
// step, a from that never ran or does not exist). d.Step is the from
// step, or empty for the failed steps alone.
func (r *wrun) validateRetry(_ workflow.Context, d Decision) error {
	if d.Action != "" && d.Action != ActionRetry {
		return fmt.Errorf("update %s takes action %q or none, not %q", UpdateRetry, ActionRetry, d.Action)
	}
	if r.status != journal.RunFailed || !r.retryOpen || r.retryReq != nil {
		return fmt.Errorf("run %s is not failed (its status is %s): only a failed run can be retried", r.runID, r.status)
	}
	_, err := r.reopens(d.Step, true) // a validator records no version: the newest rule
	return err
}

// retry takes a validated retry: the run re-opens (awaitRetry).
func (r *wrun) retry(ctx workflow.Context, d Decision) error {
	if err := r.validateRetry(ctx, d); err != nil {
		return err
	}
	r.retryReq = &d
	return nil
}

// reopens is what a retry from step from re-opens (sched.ReopensTaken on
// the machine's statuses: a pending step never ran), with the steps the
// saga took back when taken (retrytaken.go).
func (r *wrun) reopens(from string, taken bool) ([]int, error) {
	var back map[string]bool
	if taken {
		var err error
		if back, err = r.takenBack(); err != nil {
			return nil, err
		}
	}
	return sched.ReopensTaken(r.f, r.runID, from, func(i int) (journal.StepStatus, bool) {
		st := r.m.Status(i)
		return st, st != journal.StepPending && st != ""
	}, func(i int) bool { return back[r.f.Steps[i].ID] })
}

// awaitRetry keeps a failed run open for UpdateRetry for the retry window
// (Workflow.RetryWindow, zero by default: it closes at once) and, when
// one came, re-opens the steps it names and reports true: the run goes on
// at their next attempt, every other settled step keeping its output, as
// rein runs retry does locally. A run recorded before retries existed
// (GetVersion rein-retry) closes at once, as it did; one recorded before
// failed runs closed (GetVersion rein-retry-closed) keeps its window's old
// default, 24 hours, and closes as Completed. Every later run closes as
// Failed, carrying its state (r.closeFailed, closed).
func (r *wrun) awaitRetry(ctx workflow.Context) bool {
	if version(ctx, changeRetry) == workflow.DefaultVersion {
		return false
	}
	window := r.w.RetryWindow
	if version(ctx, changeRetryClosed) == workflow.DefaultVersion {
		if window == 0 {
			window = defaultRetryWindow
		}
	} else {
		r.closeFailed = true
	}
	if window <= 0 {
		return false
	}
	r.retryOpen = true
	ok, err := workflow.AwaitWithTimeout(ctx, window, func() bool { return r.retryReq != nil })
	r.retryOpen = false
	if err != nil || !ok {
		return false
	}
	d := r.retryReq
	r.retryReq = nil
	idx, err := r.reopens(d.Step, r.takesBack(ctx))
	if err != nil {
		return false // validated: not reached
	}
	r.reopen(idx)
	return true
}

// reopen re-opens steps idx of the failed run (sched.Reopens' answer):
// each goes back to pending without its output, and starts at its next
// attempt (a new key); the run's failure is gone.
func (r *wrun) reopen(idx []int) {
	r.m.Retried()
	for _, i := range idx {
		id := r.f.Steps[i].ID
		r.m.Reopen(i, r.m.Attempts(i))
		delete(r.outputs, id)
		delete(r.raw, id)
		delete(r.errs, id)
		delete(r.rounds, i)
		delete(r.kept, i)
		delete(r.fbDoubt, i)
		delete(r.answers, i)
		if r.first == nil {
			r.first = map[int]int{}
		}
		r.first[i] = r.m.Attempts(i) + 1
	}
	r.failure = nil
}
