package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/tool"
)

// PremiseError is the failure of a step whose output contradicts its
// premise (flow.Premise), or one of whose tool calls returned an output
// that contradicts its tool's (tool.Premise): a business error that is
// never retried and parks the step for a person (store.KindPremise)
// whatever its on_error, pausing the whole run before any further effect
// (sched.Machine.Held), its message naming the premise and the
// remediation on offer.
type PremiseError struct {
	RunID, StepID string
	// Tool is the tool whose declaration makes the premise; "" for a
	// step's own premise.
	Tool string
	// ID, Claim and Check are the premise's (Check its source).
	ID, Claim, Check string
}

func (e *PremiseError) Error() string {
	claim := ""
	if e.Claim != "" {
		claim = fmt.Sprintf(" (%q)", e.Claim)
	}
	on := "the output of step " + e.StepID
	if e.Tool != "" {
		on = "the output of a call of tool " + e.Tool + " by step " + e.StepID
	}
	return fmt.Sprintf("premise %s%s does not hold on %s (check %q): the run is paused here, before any further effect: no step that has not started runs, and a running for_each, repeat, plan or agent step starts no further item, round, plan step, turn or call, until a person decides, whether it depends on step %s or not; "+
		"see what the premise touched with rein runs impact %s --premise %s, take it back with rein runs remediate %s --premise %s",
		e.ID, claim, on, e.Check, e.StepID, e.RunID, e.StepID, e.RunID, e.StepID)
}

// checkPremise evaluates the step's premise on an output, under ctx (the
// attempt's, or evalCtx's): a *PremiseError (business) when it does not
// hold.
func (r *run) checkPremise(ctx context.Context, j *job, out any) error {
	s := j.step
	scope := j.scope
	scope["output"], scope[s.ID] = out, out
	ok, err := s.Premise.Check.EvalContext(ctx, scope)
	if err != nil {
		return renderFailure(ctx, s, fmt.Sprintf("premise %s check %q could not be evaluated", s.Premise.ID, s.Premise.Check.Source()), err)
	}
	if !ok {
		return fault.BusinessErr(&PremiseError{RunID: r.id, StepID: s.ID, ID: s.Premise.ID, Claim: s.Premise.Claim, Check: s.Premise.Check.Source()})
	}
	return nil
}

// premiseOf returns the failed premise in err's chain, for step j: the
// step's own, or a tool call's (invoke's *tool.PremiseError) made its
// step's; nil when err is none.
func (r *run) premiseOf(j *job, err error) *PremiseError {
	var pe *PremiseError
	if errors.As(err, &pe) {
		return pe
	}
	if tp := tool.AsPremise(err); tp != nil {
		return &PremiseError{RunID: r.id, StepID: j.step.ID, Tool: tp.Tool, ID: tp.Premise.ID, Claim: tp.Premise.Claim, Check: tp.Premise.Check}
	}
	return nil
}

// PremiseFailed reports whether err is a premise that does not hold: a
// step's, or a tool call's. Such a failure is never retried nor absorbed:
// its step parks as store.KindPremise and the run pauses (a backend that
// carries attempts elsewhere, such as Temporal, asks this of an attempt's
// error).
func PremiseFailed(err error) bool {
	var pe *PremiseError
	return errors.As(err, &pe) || tool.AsPremise(err) != nil
}
