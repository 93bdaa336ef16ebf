package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine/sched/fan"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/value"
)

// Waiting is a plan step that waits for a person's approval: the call its
// tool's approval: required, or the gate's require_approval, stopped
// before it ran (ExecutorConfig.Pausable).
type Waiting struct {
	ID   string `json:"step"`
	Tool string `json:"tool"`
	// Args are the step's resolved args as canonical JSON: an approval is
	// for exactly these.
	Args string `json:"args"`
	// Reason says who asks: the tool's declaration or the gate's rule.
	Reason string `json:"reason"`
}

// WaitError is Execute's error when no step failed but some wait for a
// person (ExecutorConfig.Pausable): the steps that did not depend on them
// ran; Steps, in plan order, are those that wait. Continue the plan with
// the people's Decisions (State.Decisions, Progress.Decisions). It is
// classed fault.Policy.
type WaitError struct {
	Steps []Waiting
}

func (e *WaitError) Error() string {
	ids := make([]string, len(e.Steps))
	for i, w := range e.Steps {
		ids[i] = w.ID
	}
	return fmt.Sprintf("plan steps %s wait for a person's approval", strings.Join(ids, ", "))
}

// Unwrap classes the wait as a policy error.
func (e *WaitError) Unwrap() error {
	return fault.New(fault.Policy, errors.New("waiting for approval"))
}

// Decision is a person's decision on a waiting plan step.
type Decision struct {
	// Approved runs the step, with exactly Args; otherwise it fails
	// without a call: "rejected by a person: <Comment>".
	Approved bool
	// Args are the args the step waited with (Waiting.Args). An approved
	// step whose args now resolve differently does not run (a conflict).
	Args    string
	Comment string
}

// decided applies a person's decision to step s of a pausable round before
// its call: it returns whether the call is approved, or the step's error
// (rejected, or its args are not those approved). No decision: not
// approved, no error.
func (r *round) decided(s *Step, args any) (bool, error) {
	d, ok := r.st.Decisions[s.ID]
	if !ok || !r.e.cfg.Pausable {
		return false, nil
	}
	if !d.Approved {
		return false, fault.Errorf(fault.Business, "rejected by a person: %s", d.Comment)
	}
	b, err := value.Canonical(args)
	if err != nil {
		return false, fault.Errorf(fault.Format, "the args of %s do not encode as JSON: %v", s.Tool, err)
	}
	if string(b) != d.Args {
		return false, fault.Errorf(fault.Conflict, "%s was approved with args %s but would run with %s: it does not run; plan it again",
			s.Tool, quoteCut(d.Args, 200), quoteCut(string(b), 200))
	}
	return true, nil
}

// wait makes step i wait when its call stopped for a person's approval
// and the executor may pause; it reports whether it did.
func (r *round) wait(s settled) bool {
	var ae *invoke.ApprovalError
	if !r.e.cfg.Pausable || s.outcome != invoke.AwaitingApproval || !errors.As(s.err, &ae) {
		return false
	}
	step := &r.p.Steps[s.i]
	b, err := value.Canonical(s.args)
	if err != nil {
		return false
	}
	r.dag.Settle(s.i, fan.Waiting, false) // it did not run
	r.st.executed = r.dag.Executed()
	r.waits = append(r.waits, Waiting{ID: step.ID, Tool: step.Tool, Args: string(b), Reason: ae.Reason})
	at := r.position(step.ID)
	r.e.emit(Event{Kind: StepWaiting, RunID: r.runID, StepID: r.stepID, PlanStep: step.ID, Tool: step.Tool, Attempt: r.attempt,
		IdempotencyKey: at.Key(), Status: "waiting", Args: s.args, Error: ae.Reason})
	return true
}

// waitError is the round's WaitError, its steps in plan order.
func (r *round) waitError() error {
	out := make([]Waiting, 0, len(r.waits))
	for i := range r.p.Steps {
		for _, w := range r.waits {
			if w.ID == r.p.Steps[i].ID {
				out = append(out, w)
			}
		}
	}
	return &WaitError{Steps: out}
}

func quoteCut(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "…"
	}
	return fmt.Sprintf("%q", s)
}
