package workflowtool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
)

// adapterRecord answers a retried submit_from_source of step s from the
// record of its adapter's call under key, when the adapter is not
// idempotent and was called already (adapterRecorder journals it): done
// is false when there is no record, or the call never reached the adapter
// (refused, its args broke its schema), so it may be made. Otherwise it is
// not made again: a succeeded call answers its recorded output, a failed
// one its recorded error, and one started and never settled (the process
// stopped, or the adapter ran past its deadline) is unknown: a person
// decides.
func (w *Workflow) adapterRecord(ctx context.Context, t *task, s *flow.Step, key string) (out any, done bool, err error) {
	calls, err := w.opts.Store.Calls(ctx, t.run.ID, s.ID)
	if err != nil {
		return nil, true, fmt.Errorf("the call records of task %s: %w", t.run.ID, err)
	}
	var c *journal.Call
	for _, x := range calls {
		if x.Key == key && x.Name == s.Adapter {
			c = x
		}
	}
	if c == nil {
		return nil, false, nil
	}
	settle := fmt.Sprintf("rein runs settle %s %s --value JSON (the output it produced), or cancel the task", t.run.ID, s.ID)
	switch c.Status {
	case journal.CallSucceeded:
		if err := json.Unmarshal(c.Output, &out); err != nil {
			return nil, true, fmt.Errorf("the recorded output of adapter %s (call %s) does not decode: %w", s.Adapter, key, err)
		}
		return out, true, nil
	case journal.CallStarted:
		return nil, true, &Error{Type: fault.Conflict, Pointer: "/step_id", Message: fmt.Sprintf(
			"adapter %s of step %s was started by an earlier submit_from_source (call %s) and its outcome is unknown: it is not idempotent, so it is not called again; a person decides: check whether its effect happened, then %s",
			s.Adapter, s.ID, key, settle)}
	case journal.CallFailed, journal.CallLate:
		switch invoke.Outcome(c.Outcome) {
		case invoke.Blocked, invoke.InvalidArgs, invoke.AwaitingApproval:
			return nil, false, nil // it never ran
		}
		class := fault.Class(c.ErrorClass)
		if class == "" || class == fault.Unclassified {
			class = fault.Business
		}
		return nil, true, &Error{Type: class, Pointer: "/step_id", Message: fmt.Sprintf(
			"adapter %s of step %s failed on an earlier submit_from_source (call %s: %s); it is not idempotent, so it is not called again; a person decides: %s",
			s.Adapter, s.ID, key, c.Error, settle)}
	}
	return nil, false, nil
}
